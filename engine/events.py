"""Typed events the agent loop emits while a turn runs.

Transports turn these into their own wire format (the stdio server: ``agent/stream``
notifications). Text events carry deltas, never cumulative text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from sandbox.info import ProtectedChange, SandboxInfo

if TYPE_CHECKING:
    from engine.rules.decision import DecidedBy

ToolStatus = Literal["completed", "failed", "denied", "timed_out", "cancelled"]
"""How a tool call ended (the wire's ``status``): declared here, used by the protocol models."""

StopReason = Literal["end_turn", "max_tokens", "tool_limit", "cancelled"]
"""Why a turn ended (the wire's ``stopReason``)."""


@dataclass(frozen=True)
class ContentDelta:
    text: str


@dataclass(frozen=True)
class ReasoningDelta:
    text: str


@dataclass(frozen=True)
class ToolArgsDelta:
    """Live preview of a call's raw arguments while the model writes them. Never means running."""

    index: int
    text: str


@dataclass(frozen=True)
class ToolStarted:
    tool_call_id: str
    name: str
    arguments: dict[str, Any]
    awaiting_confirmation: bool


@dataclass(frozen=True)
class ToolOutput:
    tool_call_id: str
    text: str


@dataclass(frozen=True)
class ToolEnded:
    tool_call_id: str
    name: str
    status: ToolStatus
    exit_code: int | None
    result: str
    sandbox: SandboxInfo | None = None
    """The isolation the call's code ran under; None when no code ran."""
    protected: tuple[ProtectedChange, ...] = ()
    """Auto-run paths the call created or changed, and what was done about each."""
    decided_by: DecidedBy | None = None
    """Who decided whether it ran (None: it never reached the gate)."""


@dataclass(frozen=True)
class StatusNote:
    text: str


AgentEvent = (
    ContentDelta
    | ReasoningDelta
    | ToolArgsDelta
    | ToolStarted
    | ToolOutput
    | ToolEnded
    | StatusNote
)
