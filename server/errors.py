"""JSON-RPC errors, mapped in one place.

Handlers raise :class:`RpcError` subclasses (or let pydantic's ``ValidationError`` escape);
:func:`to_response_error` turns anything into the error the client gets. Nothing unexpected
reaches the wire with a traceback: it becomes -32603 with a short message and the traceback goes
to the log on stderr. The codes and the shapes of ``data`` are part of the wire contract
(:mod:`server.protocol.errors`).
"""

from __future__ import annotations

import asyncio
import logging

from lsprotocol.types import ResponseError
from pydantic import ValidationError
from pygls.exceptions import JsonRpcException

from server.protocol.errors import (
    ERROR_CODES,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    REQUEST_CANCELLED,
    ErrorData,
    InvalidParamsData,
)

logger = logging.getLogger(__name__)


class RpcError(Exception):
    """An error with a JSON-RPC code, a message a person can act on, and optional data."""

    code: int = INTERNAL_ERROR

    def __init__(self, message: str, data: ErrorData | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.data = data


class InvalidRequest(RpcError):
    """Well-formed but cannot be served (a gate that cannot be wired, a busy session)."""

    code = INVALID_REQUEST


class InvalidParams(RpcError):
    code = INVALID_PARAMS


def unknown_session(session_id: str) -> InvalidParams:
    return InvalidParams(
        f"Invalid params: sessionId: unknown session {session_id!r}",
        InvalidParamsData(fields=["sessionId"]),
    )


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
    return InvalidParams("Invalid params: " + "; ".join(problems), InvalidParamsData(fields=fields))


def to_response_error(exc: BaseException) -> ResponseError:
    """Map any exception to the JSON-RPC error sent to the client."""
    if isinstance(exc, ValidationError):
        exc = invalid_params_from(exc)
    if isinstance(exc, RpcError):
        data = None if exc.data is None else exc.data.wire()
        return ResponseError(code=exc.code, message=exc.message, data=data)
    if isinstance(exc, asyncio.CancelledError):
        return ResponseError(code=REQUEST_CANCELLED, message="Request cancelled")
    if isinstance(exc, JsonRpcException) and exc.code in ERROR_CODES and exc.code != INTERNAL_ERROR:
        # pygls' own errors (an unknown workspace/executeCommand is -32602): their code and
        # message, never their data (pygls puts tracebacks there).
        return ResponseError(code=exc.code, message=str(exc.message))
    logger.error("internal error", exc_info=exc)
    return ResponseError(
        code=INTERNAL_ERROR,
        message=f"Internal error ({type(exc).__name__}); see the server log for details",
    )
