"""agent/stream notifications: text reaches the editor promptly, in order, complete, and without one
write per token."""

from __future__ import annotations

import asyncio
from typing import Any

from engine.events import (
    ContentDelta,
    ReasoningDelta,
    StatusNote,
    ToolArgsDelta,
    ToolEnded,
    ToolOutput,
    ToolStarted,
)
from sandbox.info import UNSANDBOXED
from server.stream import TurnStream

HEAD = {"sessionId": "s1", "turnId": "t1"}


class Wire:
    """Collects notifications and lets a test wait until some have arrived."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self._arrived = asyncio.Event()

    def __call__(self, message: dict[str, Any]) -> None:
        self.messages.append(message)
        self._arrived.set()

    async def wait_for(self, count: int) -> None:
        async with asyncio.timeout(5):  # hang guard only
            while len(self.messages) < count:
                self._arrived.clear()
                await self._arrived.wait()

    def texts(self, kind: str) -> list[str]:
        return [m["text"] for m in self.messages if m["type"] == kind]


def make_stream(window: float = 0.02) -> tuple[Wire, TurnStream]:
    wire = Wire()
    return wire, TurnStream(wire, "s1", "t1", window=window)


async def test_first_content_delta_is_sent_at_once() -> None:
    wire, stream = make_stream(window=60)
    stream.emit(ContentDelta("Hel"))
    assert wire.messages == [{**HEAD, "type": "content", "text": "Hel"}]


async def test_first_reasoning_delta_is_sent_at_once() -> None:
    wire, stream = make_stream(window=60)
    stream.emit(ReasoningDelta("Thinking"))
    assert wire.messages == [{**HEAD, "type": "reasoning", "text": "Thinking"}]


async def test_later_content_deltas_arrive_as_one_notification_after_the_window() -> None:
    wire, stream = make_stream(window=0.02)
    stream.emit(ContentDelta("Hel"))
    stream.emit(ContentDelta("lo, "))
    stream.emit(ContentDelta("world"))
    assert len(wire.messages) == 1  # held back, not one write per token
    await wire.wait_for(2)
    assert wire.messages == [
        {**HEAD, "type": "content", "text": "Hel"},
        {**HEAD, "type": "content", "text": "lo, world"},
    ]


async def test_tool_start_sends_the_pending_text_first() -> None:
    wire, stream = make_stream(window=60)
    stream.emit(ContentDelta("I will "))
    stream.emit(ContentDelta("run it."))
    stream.emit(ToolStarted("call_1", "terminal", {"command": "ls"}, awaiting_confirmation=True))
    assert [(m["type"], m.get("text")) for m in wire.messages] == [
        ("content", "I will "),
        ("content", "run it."),
        ("tool_start", None),
    ]
    start = wire.messages[-1]
    assert start == {
        **HEAD,
        "type": "tool_start",
        "toolCallId": "call_1",
        "name": "terminal",
        "arguments": {"command": "ls"},
        "awaitingConfirmation": True,
    }


async def test_every_kind_of_event_keeps_its_order_on_the_wire() -> None:
    wire, stream = make_stream(window=60)
    events = [
        ReasoningDelta("hmm"),
        ReasoningDelta(" ok"),
        ContentDelta("Listing."),
        ToolArgsDelta(0, '{"name": '),
        ToolArgsDelta(0, '"terminal"}'),
        ToolStarted("call_1", "terminal", {"command": "ls"}, awaiting_confirmation=False),
        StatusNote("Running terminal"),
        ToolOutput("call_1", "a\n"),
        ToolOutput("call_1", "b\n"),
        ToolEnded("call_1", "terminal", "completed", 0, "a\nb\n", UNSANDBOXED),
        ContentDelta("Done."),
    ]
    for event in events:
        stream.emit(event)
    stream.flush()
    assert [m["type"] for m in wire.messages] == [
        "reasoning",
        "reasoning",
        "content",
        "tool_args",
        "tool_start",
        "status",
        "tool_output",
        "tool_end",
        "content",
    ]
    assert all(m["sessionId"] == "s1" and m["turnId"] == "t1" for m in wire.messages)
    assert wire.texts("tool_args") == ['{"name": "terminal"}']
    assert wire.texts("tool_output") == ["a\nb\n"]
    assert wire.messages[7]["sandbox"] == {"level": "none", "network": True}


async def test_streamed_text_adds_up_to_exactly_what_the_model_wrote() -> None:
    wire, stream = make_stream(window=0.005)
    content = [f"word{i} " for i in range(50)]
    reasoning = [f"step{i}," for i in range(20)]
    for i, piece in enumerate(content):
        stream.emit(ContentDelta(piece))
        if i < len(reasoning):
            stream.emit(ReasoningDelta(reasoning[i]))
        if i % 10 == 0:
            await asyncio.sleep(0.01)  # let some windows close mid-stream
    stream.flush()
    assert "".join(wire.texts("content")) == "".join(content)
    assert "".join(wire.texts("reasoning")) == "".join(reasoning)


async def test_flush_at_turn_end_sends_the_rest_once() -> None:
    wire, stream = make_stream(window=0.01)
    stream.emit(ContentDelta("The answer"))
    stream.emit(ContentDelta(" is 42."))
    stream.flush()
    assert wire.texts("content") == ["The answer", " is 42."]
    await asyncio.sleep(0.05)  # the cancelled window must not send anything again
    assert wire.texts("content") == ["The answer", " is 42."]


async def test_output_of_different_tool_calls_is_never_merged() -> None:
    wire, stream = make_stream(window=60)
    stream.emit(ToolOutput("call_a", "from a\n"))
    stream.emit(ToolOutput("call_b", "from b\n"))
    stream.emit(ToolOutput("call_b", "more b\n"))
    stream.emit(ToolOutput("call_a", "more a\n"))
    stream.flush()
    assert [(m["toolCallId"], m["text"]) for m in wire.messages] == [
        ("call_a", "from a\n"),
        ("call_b", "from b\nmore b\n"),
        ("call_a", "more a\n"),
    ]


async def test_a_slow_models_tokens_are_never_held_back() -> None:
    wire = Wire()
    stream = TurnStream(wire, "s1", "t1", window=0.02)
    for i in range(4):
        stream.emit(ContentDelta(f"tok{i} "))
        # Each token is on the wire as soon as it exists: nothing waits for a merge timer.
        assert wire.texts("content")[-1] == f"tok{i} "
        await asyncio.sleep(0.03)  # slower than the window, like a 13 ms/token model vs 10 ms
    assert len(wire.messages) == 4
