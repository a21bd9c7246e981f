"""``agent/chat`` and ``agent/cancel``: a turn of the conversation, and stopping it."""

from __future__ import annotations

from typing import Any

from pydantic import Field, StrictBool, StrictInt, field_validator

from engine.events import StopReason, ToolStatus
from server.protocol.base import StrictParams, WireModel


class ChatParams(StrictParams):
    """``agent/chat`` params: one user message, and how this turn may use tools."""

    prompt: str = Field(min_length=1, description="The user's message; must not be blank.")
    session_id: str | None = Field(
        default=None,
        min_length=1,
        description="Continue this session (its history and its allow_session approvals); "
        "absent: a new session.",
    )
    enable_tools: StrictBool = Field(
        default=True,
        description="Offer tools to the model at all; when false, tool-call markup is text.",
    )
    enabled_tools: list[str] | None = Field(
        default=None, description="Offer only these built-in tools (default: all)."
    )
    max_tool_calls: StrictInt = Field(
        default=25,
        ge=0,
        description="Tool calls this request may run; a further call ends the turn with "
        "tool_limit. 0: no tool runs at all.",
    )
    confirm_tool_calls: StrictBool | None = Field(
        default=None, description="Override of the server's confirmToolCalls for this request."
    )
    confirm_code_execution: StrictBool | None = Field(
        default=None,
        description="Override of the server's confirmCodeExecution for this request.",
    )
    confirm_file_edits: StrictBool | None = Field(
        default=None, description="Override of the server's confirmFileEdits for this request."
    )
    bypass_permissions: StrictBool | None = Field(
        default=None, description="Override of the server's bypassPermissions for this request."
    )
    max_tokens: StrictInt | None = Field(
        default=None, ge=1, description="Token limit of each model turn (backend default)."
    )
    temperature: float | None = Field(
        default=None, ge=0.0, le=5.0, description="Sampling temperature (backend default)."
    )
    seed: StrictInt | None = Field(default=None, description="Sampling seed (backend default).")
    model: str | None = Field(
        default=None, min_length=1, description="Switch to this model before the turn."
    )

    @field_validator("prompt")
    @classmethod
    def _prompt_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value


class ToolCallSummary(WireModel):
    """One tool call of the turn, as it ended."""

    id: str = Field(description="The call's toolCallId (as in agent/stream).")
    name: str = Field(description="The tool's name.")
    arguments: dict[str, Any] = Field(description="The arguments the model wrote.")
    status: ToolStatus = Field(description="How the call ended.")
    exit_code: int | None = Field(
        description="The process exit code for python/terminal (negative: killed by that "
        "signal); null when no process ran."
    )


class ChatResult(WireModel):
    """``agent/chat`` result, sent after every notification of the turn."""

    session_id: str = Field(description="The session the turn belongs to.")
    turn_id: str = Field(description="This turn's id (as in agent/stream).")
    stop_reason: StopReason = Field(description="Why the turn ended.")
    text: str = Field(description="Exactly the concatenation of the turn's content deltas.")
    tool_calls: list[ToolCallSummary] = Field(description="Every tool call of the turn, in order.")


class CancelParams(StrictParams):
    """``agent/cancel`` params."""

    session_id: str = Field(min_length=1, description="The session whose running turn to stop.")


class CancelResult(WireModel):
    """``agent/cancel`` result."""

    cancelled: bool = Field(description="False when nothing was running.")
