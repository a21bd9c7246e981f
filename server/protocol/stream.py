"""``agent/stream``: the notifications of a running turn, one model per ``type``."""

from __future__ import annotations

from functools import cache
from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter

from engine.events import ToolStatus
from sandbox.info import ProtectedAction
from server.protocol.approvals import SandboxState
from server.protocol.base import WireModel, optional
from server.protocol.rules import DecidedByView


class ProtectedPath(WireModel):
    """An auto-run path a call created or changed, and what Gatehouse did about it."""

    path: str = Field(description="Relative to the workspace.")
    action: ProtectedAction = Field(
        description="quarantined (moved out of the workspace, nothing lost), restored (the "
        "original written back) or removed (the call removed it; reported only)."
    )
    detail: str = Field(description="What happened, for a person.")


class StreamHead(WireModel):
    """What every ``agent/stream`` notification carries."""

    session_id: str = Field(description="The session of the turn.")
    turn_id: str = Field(description="The turn this event belongs to.")


class ContentEvent(StreamHead):
    """A delta of the answer (never cumulative)."""

    type: Literal["content"] = "content"
    text: str = Field(description="The new text.")


class ReasoningEvent(StreamHead):
    """A delta of the model's reasoning (``<think>``); not part of the answer's text."""

    type: Literal["reasoning"] = "reasoning"
    text: str = Field(description="The new text.")


class ToolArgsEvent(StreamHead):
    """Live preview of the raw text of a call while the model writes it; never means running."""

    type: Literal["tool_args"] = "tool_args"
    index: int = Field(description="Which call of this model turn (0-based).")
    text: str = Field(description="The new raw text.")


class ToolStartEvent(StreamHead):
    """A parsed tool call."""

    type: Literal["tool_start"] = "tool_start"
    tool_call_id: str = Field(description="The call's id.")
    name: str = Field(description="The tool's name.")
    arguments: dict[str, Any] = Field(description="The arguments the model wrote.")
    awaiting_confirmation: bool = Field(
        description="True: an approval request follows, and nothing runs until it is answered."
    )


class ToolOutputEvent(StreamHead):
    """A delta of a running call's merged stdout/stderr (capped at 1 MiB, with a notice)."""

    type: Literal["tool_output"] = "tool_output"
    tool_call_id: str = Field(description="The call's id.")
    text: str = Field(description="The new output.")


class ToolEndEvent(StreamHead):
    """The call is over."""

    type: Literal["tool_end"] = "tool_end"
    tool_call_id: str = Field(description="The call's id.")
    name: str = Field(description="The tool's name.")
    status: ToolStatus = Field(description="How the call ended.")
    exit_code: int | None = Field(
        description="The process exit code for python/terminal; null when no process ran."
    )
    result: str = Field(description="Exactly what the model receives.")
    sandbox: SandboxState | None = optional(
        "Present when code ran: the isolation it really ran under (none under bypass)."
    )
    protected: list[ProtectedPath] | None = optional(
        "Present when the call created or changed auto-run paths (.git, hooks, .vscode, ...): "
        "what was done about each (see docs/security.md)."
    )
    decided_by: DecidedByView | None = optional(
        "Who decided whether the call ran (a rule, a person's answer, the settings, or a "
        "failure to answer) and the SHA-256 of what was decided; absent when the call never "
        "reached the gate (invalid arguments, an unknown tool)."
    )


class StatusEvent(StreamHead):
    """A line for a person: loading, waiting for approval, running, limits, context trimming."""

    type: Literal["status"] = "status"
    text: str = Field(description="The line.")


StreamEvent = Annotated[
    ContentEvent
    | ReasoningEvent
    | ToolArgsEvent
    | ToolStartEvent
    | ToolOutputEvent
    | ToolEndEvent
    | StatusEvent,
    Field(discriminator="type"),
]
"""Every ``agent/stream`` notification: a union discriminated on ``type``."""


@cache
def stream_event_adapter() -> TypeAdapter[StreamEvent]:
    """Validates (clients, tests) and describes (the schema) an ``agent/stream`` notification;
    built on first use, not at start-up."""
    return TypeAdapter(StreamEvent)
