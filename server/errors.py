"""JSON-RPC errors, mapped in one place.

Handlers raise :class:`RpcError` subclasses (or let pydantic's ``ValidationError`` escape);
:func:`to_response_error` turns anything into the error the client gets. Nothing unexpected
reaches the wire with a traceback: it becomes -32603 with a short message and the traceback goes
to the log on stderr.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from lsprotocol.types import ResponseError
from pydantic import ValidationError

logger = logging.getLogger(__name__)

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
REQUEST_CANCELLED = -32800


class RpcError(Exception):
    """An error with a JSON-RPC code, a message a person can act on, and optional data."""

    code: int = INTERNAL_ERROR

    def __init__(self, message: str, data: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.data = data


class InvalidRequest(RpcError):
    """Well-formed but cannot be served (a gate that cannot be wired, a busy session)."""

    code = INVALID_REQUEST


class InvalidParams(RpcError):
    code = INVALID_PARAMS


def _location(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(part) for part in loc) or "params"


def invalid_params_from(exc: ValidationError) -> InvalidParams:
    """One -32602 naming every bad field, e.g. ``Invalid params: prompt: Field required``."""
    problems = []
    fields = []
    for err in exc.errors():
        where = _location(err["loc"])
        message = err["msg"]
        if err["type"] == "extra_forbidden":
            message = "unknown field"
        problems.append(f"{where}: {message}")
        fields.append(where)
    return InvalidParams("Invalid params: " + "; ".join(problems), {"fields": fields})


def to_response_error(exc: BaseException) -> ResponseError:
    """Map any exception to the JSON-RPC error sent to the client."""
    if isinstance(exc, ValidationError):
        exc = invalid_params_from(exc)
    if isinstance(exc, RpcError):
        return ResponseError(code=exc.code, message=exc.message, data=exc.data)
    if isinstance(exc, asyncio.CancelledError):
        return ResponseError(code=REQUEST_CANCELLED, message="Request cancelled")
    logger.error("internal error", exc_info=exc)
    return ResponseError(
        code=INTERNAL_ERROR,
        message=f"Internal error ({type(exc).__name__}); see the server log for details",
    )
