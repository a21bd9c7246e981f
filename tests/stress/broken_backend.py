"""A backend that breaks on request, and an in-process service around it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Sequence
from pathlib import Path
from typing import Any

from engine.backends.base import Backend, Finish, GenerationOptions, Message, Notice, ToolSpec
from sandbox.tiers import unsandboxed
from server.options import ServerOptions
from server.service import AgentService, ClientFeatures


class BrokenBackend(Backend):
    """The prompt says how to fail: "raises" (after a few tokens), "garbage" (a non-text
    chunk), "hang" (never another token); anything else answers "fine"."""

    name = "broken"
    model = "broken"

    def __init__(self) -> None:
        self.hanging = asyncio.Event()

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], options: GenerationOptions
    ) -> AsyncGenerator[str | Notice | Finish, None]:
        prompt = messages[-1].content
        if "raises" in prompt or "garbage" in prompt:
            yield "Hello "
            await asyncio.sleep(0)
            if "raises" in prompt:
                raise RuntimeError("the engine crashed")
            bad: Any = 42
            yield bad
        elif "hang" in prompt:
            self.hanging.set()
            await asyncio.Event().wait()
        yield "fine"
        yield Finish("stop")


class _Channel:
    def send_request(self, method: str, params: Any = None, *, msg_id: str) -> Any:
        raise AssertionError("no approvals expected")

    def withdraw_request(self, msg_id: str) -> None:
        pass


def service_with(tmp_path: Path, backend: Backend) -> tuple[AgentService, list[dict[str, Any]]]:
    sent: list[dict[str, Any]] = []
    options = ServerOptions(backend="scripted")
    service = AgentService(_Channel(), sent.append, options=options, workspace=tmp_path)
    service.configure(options, tmp_path, ClientFeatures(tool_confirm=True), unsandboxed())
    service.models.current = backend

    async def ensure(model: str | None, progress: Any) -> Backend:
        return backend

    service.models.ensure = ensure  # type: ignore[method-assign]
    return service, sent
