"""Typed events the agent loop emits while a turn runs.

Transports turn these into their own wire format (the stdio server: ``agent/stream``
notifications). Text events carry deltas, never cumulative text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

ToolStatus = Literal["completed", "failed", "denied", "timed_out", "cancelled"]


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
    sandbox: dict[str, Any] | None = None
    protected: tuple[dict[str, str], ...] = ()
    """Auto-run paths the call created or changed: ``{"path", "action", "detail"}`` each."""


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
