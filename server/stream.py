"""Turns engine events into ``agent/stream`` notifications, coalescing text deltas.

A delta goes out at once when nothing was sent during the last ``window`` seconds (so the first
delta of a turn, and every token of a model slower than the window, is never delayed); deltas that
arrive faster are merged until the window has passed, so a fast model does not cost one write per
token. Anything that is not a plain delta (a tool start, an approval request, the response)
flushes first, so the order on the wire is always the order of events.

This module is the one place where engine events become wire models
(:mod:`server.protocol.stream`).
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
from sandbox.info import SandboxInfo
from server.protocol import (
    ContentEvent,
    ProtectedPath,
    ReasoningEvent,
    SandboxState,
    StatusEvent,
    ToolArgsEvent,
    ToolEndEvent,
    ToolOutputEvent,
    ToolStartEvent,
    WireModel,
)
from server.rules import decided_by_view

Notify = Callable[[dict[str, Any]], None]

_Delta = ContentDelta | ReasoningDelta | ToolOutput | ToolArgsDelta


def sandbox_state(info: SandboxInfo) -> SandboxState:
    return SandboxState(level=info.level, network=info.network)


def event_to_wire(event: AgentEvent, session_id: str, turn_id: str) -> WireModel:
    """The ``agent/stream`` notification for one engine event."""
    head: dict[str, Any] = {"session_id": session_id, "turn_id": turn_id}
    if isinstance(event, ContentDelta):
        return ContentEvent(**head, text=event.text)
    if isinstance(event, ReasoningDelta):
        return ReasoningEvent(**head, text=event.text)
    if isinstance(event, ToolArgsDelta):
        return ToolArgsEvent(**head, index=event.index, text=event.text)
    if isinstance(event, ToolStarted):
        return ToolStartEvent(
            **head,
            tool_call_id=event.tool_call_id,
            name=event.name,
            arguments=event.arguments,
            awaiting_confirmation=event.awaiting_confirmation,
        )
    if isinstance(event, ToolOutput):
        return ToolOutputEvent(**head, tool_call_id=event.tool_call_id, text=event.text)
    if isinstance(event, ToolEnded):
        return ToolEndEvent(
            **head,
            tool_call_id=event.tool_call_id,
            name=event.name,
            status=event.status,
            exit_code=event.exit_code,
            result=event.result,
            sandbox=None if event.sandbox is None else sandbox_state(event.sandbox),
            protected=[
                ProtectedPath(path=c.path, action=c.action, detail=c.detail)
                for c in event.protected
            ]
            or None,
            decided_by=None if event.decided_by is None else decided_by_view(event.decided_by),
        )
    assert isinstance(event, StatusNote)
    return StatusEvent(**head, text=event.text)


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
        self._session_id = session_id
        self._turn_id = turn_id
        self._window = window
        self._pending_key: tuple[str, str] | None = None
        self._pending: _Delta | None = None
        self._pending_texts: list[str] = []
        self._timer: asyncio.TimerHandle | None = None
        self._last_sent = float("-inf")

    def emit(self, event: AgentEvent) -> None:
        key = _merge_key(event)
        if key is not None and key == self._pending_key and self._pending is not None:
            assert isinstance(event, _Delta)
            self._pending_texts.append(event.text)
            return
        self.flush()
        loop = asyncio.get_running_loop()
        quiet_for = loop.time() - self._last_sent
        if key is None or quiet_for >= self._window:
            self._send(event_to_wire(event, self._session_id, self._turn_id))
            return
        assert isinstance(event, _Delta)
        self._pending_key, self._pending, self._pending_texts = key, event, [event.text]
        self._timer = loop.call_later(self._window - quiet_for, self.flush)

    def flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._pending is not None:
            event, texts = self._pending, self._pending_texts
            self._pending, self._pending_key, self._pending_texts = None, None, []
            merged = type(event)(**{**vars(event), "text": "".join(texts)})
            self._send(event_to_wire(merged, self._session_id, self._turn_id))

    def _send(self, message: WireModel) -> None:
        self._last_sent = asyncio.get_running_loop().time()
        self._notify(message.wire())
