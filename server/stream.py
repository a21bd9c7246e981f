"""Turns engine events into ``agent/stream`` notifications, coalescing text deltas.

A delta goes out at once when nothing was sent during the last ``window`` seconds (so the first
delta of a turn, and every token of a model slower than the window, is never delayed); deltas that
arrive faster are merged until the window has passed, so a fast model does not cost one write per
token. Anything that is not a plain delta (a tool start, an approval request, the response)
flushes first, so the order on the wire is always the order of events.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from engine.events import (
    AgentEvent,
    ContentDelta,
    ReasoningDelta,
    StatusNote,
    ToolArgsDelta,
    ToolEnded,
    ToolOutput,
    ToolStarted,
)

Notify = Callable[[dict[str, Any]], None]


def event_to_wire(event: AgentEvent) -> dict[str, Any]:
    """The type-specific fields of one ``agent/stream`` notification."""
    if isinstance(event, ContentDelta):
        return {"type": "content", "text": event.text}
    if isinstance(event, ReasoningDelta):
        return {"type": "reasoning", "text": event.text}
    if isinstance(event, ToolArgsDelta):
        return {"type": "tool_args", "index": event.index, "text": event.text}
    if isinstance(event, ToolStarted):
        return {
            "type": "tool_start",
            "toolCallId": event.tool_call_id,
            "name": event.name,
            "arguments": event.arguments,
            "awaitingConfirmation": event.awaiting_confirmation,
        }
    if isinstance(event, ToolOutput):
        return {"type": "tool_output", "toolCallId": event.tool_call_id, "text": event.text}
    if isinstance(event, ToolEnded):
        wire: dict[str, Any] = {
            "type": "tool_end",
            "toolCallId": event.tool_call_id,
            "name": event.name,
            "status": event.status,
            "exitCode": event.exit_code,
            "result": event.result,
        }
        if event.sandbox is not None:
            wire["sandbox"] = event.sandbox
        if event.protected:
            wire["protected"] = list(event.protected)
        return wire
    assert isinstance(event, StatusNote)
    return {"type": "status", "text": event.text}


def _merge_key(event: AgentEvent) -> tuple[str, str] | None:
    """Events that may be merged with the previous one of the same key."""
    if isinstance(event, ContentDelta):
        return ("content", "")
    if isinstance(event, ReasoningDelta):
        return ("reasoning", "")
    if isinstance(event, ToolOutput):
        return ("tool_output", event.tool_call_id)
    if isinstance(event, ToolArgsDelta):
        return ("tool_args", str(event.index))
    return None


class TurnStream:
    """One turn's notification stream."""

    def __init__(
        self, notify: Notify, session_id: str, turn_id: str, *, window: float = 0.01
    ) -> None:
        self._notify = notify
        self._head = {"sessionId": session_id, "turnId": turn_id}
        self._window = window
        self._pending_key: tuple[str, str] | None = None
        self._pending: dict[str, Any] | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._last_sent = float("-inf")

    def emit(self, event: AgentEvent) -> None:
        key = _merge_key(event)
        if key is not None and key == self._pending_key and self._pending is not None:
            self._pending["text"] += event_to_wire(event)["text"]
            return
        self.flush()
        message = {**self._head, **event_to_wire(event)}
        loop = asyncio.get_running_loop()
        quiet_for = loop.time() - self._last_sent
        if key is None or quiet_for >= self._window:
            self._send(message)
            return
        self._pending_key, self._pending = key, message
        self._timer = loop.call_later(self._window - quiet_for, self.flush)

    def flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._pending is not None:
            message, self._pending, self._pending_key = self._pending, None, None
            self._send(message)

    def _send(self, message: dict[str, Any]) -> None:
        self._last_sent = asyncio.get_running_loop().time()
        self._notify(message)
