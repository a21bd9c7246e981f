"""Every Gatehouse message on the wire, as pydantic models with camelCase aliases.

Method names live here too, so the server, the harness and the docs agree on one spelling.
``docs/protocol.md`` describes the same shapes for people.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, field_validator
from pydantic.alias_generators import to_camel

AGENT_CHAT = "agent/chat"
AGENT_CANCEL = "agent/cancel"
AGENT_STATUS = "agent/status"
AGENT_STREAM = "agent/stream"
TOOL_CONFIRM = "toolConfirm"

StopReason = Literal["end_turn", "max_tokens", "tool_limit", "cancelled"]
ToolStatus = Literal["completed", "failed", "denied", "timed_out", "cancelled"]
ConfirmReason = Literal["code_execution", "all_tools"]


class WireModel(BaseModel):
    """camelCase on the wire, snake_case in Python."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)

    def wire(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")


class StrictParams(WireModel):
    """Request params: unknown fields are errors (a typo in a safety flag must not pass)."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, frozen=True, extra="forbid"
    )


# --- agent/chat ---------------------------------------------------------------------------------


class ChatParams(StrictParams):
    prompt: str = Field(min_length=1)
    session_id: str | None = Field(default=None, min_length=1)
    enable_tools: StrictBool = True
    enabled_tools: list[str] | None = None
    max_tool_calls: StrictInt = Field(default=25, ge=0)
    confirm_tool_calls: StrictBool | None = None
    confirm_code_execution: StrictBool | None = None
    bypass_permissions: StrictBool | None = None
    max_tokens: StrictInt | None = Field(default=None, ge=1)
    temperature: float | None = Field(default=None, ge=0.0, le=5.0)
    seed: StrictInt | None = None
    model: str | None = Field(default=None, min_length=1)

    @field_validator("prompt")
    @classmethod
    def _prompt_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value


class ToolCallSummary(WireModel):
    id: str
    name: str
    arguments: dict[str, Any]
    status: ToolStatus
    exit_code: int | None = None

    def wire(self) -> dict[str, Any]:
        # exitCode is always present (null when the call did not run a process).
        return self.model_dump(by_alias=True, mode="json")


class ChatResult(WireModel):
    session_id: str
    turn_id: str
    stop_reason: StopReason
    text: str
    tool_calls: list[ToolCallSummary]

    def wire(self) -> dict[str, Any]:
        return {
            "sessionId": self.session_id,
            "turnId": self.turn_id,
            "stopReason": self.stop_reason,
            "text": self.text,
            "toolCalls": [call.wire() for call in self.tool_calls],
        }


# --- agent/cancel, agent/status -----------------------------------------------------------------


class CancelParams(StrictParams):
    session_id: str = Field(min_length=1)


class StatusParams(StrictParams):
    pass


# --- toolConfirm (server -> client) -------------------------------------------------------------


class SandboxWire(WireModel):
    level: str
    network: bool


class ToolConfirmParams(WireModel):
    session_id: str
    turn_id: str
    tool_call_id: str
    approval_id: str
    name: str
    arguments: dict[str, Any]
    reason: ConfirmReason
    sandbox: SandboxWire


class ToolConfirmResult(BaseModel):
    """The client's answer. Anything else (missing, unknown decision, wrong types) is malformed."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    decision: Literal["allow", "allow_session", "deny"]
    message: str | None = None
