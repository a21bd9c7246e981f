"""Work-done progress (``$/progress``) for long steps such as loading a model."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from typing import Any

from lsprotocol import types as lsp

logger = logging.getLogger(__name__)


class WorkDone:
    """One progress bar in the editor; silently nothing when the client cannot show one."""

    def __init__(self, protocol: Any, supported: bool, title: str) -> None:
        self._protocol = protocol
        self._supported = supported
        self._title = title
        self._token: str | None = None

    async def begin(self, message: str) -> None:
        if not self._supported:
            return
        token = "gatehouse-" + secrets.token_hex(6)
        try:
            await asyncio.wait_for(self._protocol.progress.create_async(token), 5)
        except (TimeoutError, Exception) as exc:  # the client refused or never answered
            logger.info("no progress bar: %s", exc)
            return
        self._token = token
        self._protocol.progress.begin(
            token, lsp.WorkDoneProgressBegin(title=self._title, message=message)
        )

    def report(self, message: str, percentage: int | None = None) -> None:
        if self._token is not None:
            value = lsp.WorkDoneProgressReport(message=message, percentage=percentage)
            self._protocol.progress.report(token=self._token, value=value)

    def end(self, message: str) -> None:
        if self._token is not None:
            with contextlib.suppress(Exception):
                self._protocol.progress.end(self._token, lsp.WorkDoneProgressEnd(message=message))
            self._token = None
