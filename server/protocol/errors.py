"""JSON-RPC error codes and the ``data`` of each Gatehouse error.

The exceptions that carry them, and the mapping of every failure to a code, are in
:mod:`server.errors`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from engine.gate import GateFlag
from server.protocol.base import WireModel
from server.protocol.memory import MemoryUnavailableData
from server.protocol.model_list import PullCancelledData, PullFailedData

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
REQUEST_CANCELLED = -32800

ERROR_CODES: dict[int, str] = {
    PARSE_ERROR: "the body is not valid JSON",
    INVALID_REQUEST: "not a JSON-RPC 2.0 request, or one that cannot be served",
    METHOD_NOT_FOUND: "unknown method",
    INVALID_PARAMS: "invalid params",
    INTERNAL_ERROR: "an unexpected server error",
    REQUEST_CANCELLED: "cancelled with $/cancelRequest",
}
"""Every code the server sends, and when."""


class InvalidParamsData(WireModel):
    """``data`` of -32602: which params were wrong."""

    fields: list[str] = Field(description="Dotted paths of the bad params, e.g. maxToolCalls.")


class UnwiredGateData(WireModel):
    """``data`` of -32600 when a permission flag would need a prompt this client cannot show."""

    param: GateFlag = Field(description="The flag that needs a prompt.")


class BusySessionData(WireModel):
    """``data`` of -32600 when the session is still running a turn."""

    session_id: str = Field(description="The busy session.")
    reason: Literal["busy"] = "busy"


class ModelUnavailableData(WireModel):
    """``data`` of -32600 when the requested model cannot be used now."""

    param: Literal["model"] = "model"
    reason: Literal["busy", "load_failed"] = Field(
        description="busy: another session is generating with the loaded model; load_failed: "
        "the model could not be loaded (the message says why)."
    )


ErrorData = (
    InvalidParamsData
    | UnwiredGateData
    | BusySessionData
    | ModelUnavailableData
    | PullFailedData
    | PullCancelledData
    | MemoryUnavailableData
)
"""Every shape of ``error.data`` the server sends."""
