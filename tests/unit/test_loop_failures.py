"""A tool or a model that fails never leaves a call open: every tool_start gets its tool_end and
the turn ends with a stop reason the client understands."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from engine.backends.scripted import ScriptedBackend, ScriptedTurn
from engine.events import AgentEvent, StatusNote, ToolEnded, ToolStarted
from engine.gate import GatePolicy
from engine.loop import AgentLoop
from engine.tools.base import Tool, ToolArgs, ToolContext, ToolOutcome
from engine.turns import Conversation, TurnRequest
from sandbox.box import Box


class Boom(Tool):
    name = "boom"
    description = "Fails with a bug."
    args_model = ToolArgs
    kind = "read"

    async def run(self, args: Any, ctx: ToolContext) -> ToolOutcome:
        raise RuntimeError("a bug in the tool")


async def _never_asked(_request: Any) -> Any:
    raise AssertionError("not gated")


async def test_a_tool_that_raises_still_ends_its_call(tmp_path: Path) -> None:
    call = '<tool_call>{"name": "boom", "arguments": {}}</tool_call>'
    turns = [ScriptedTurn(call), ScriptedTurn("ok")]
    loop = AgentLoop(ScriptedBackend(turns), {"boom": Boom()}, Box(tmp_path))
    events: list[AgentEvent] = []
    request = TurnRequest(prompt="go", policy=GatePolicy(confirm_code_execution=False))
    result = await loop.run(Conversation(), request, _never_asked, events.append)
    starts = [e.tool_call_id for e in events if isinstance(e, ToolStarted)]
    ends = [e for e in events if isinstance(e, ToolEnded)]
    assert starts == [e.tool_call_id for e in ends]
    assert ends[0].status == "failed" and "a bug in the tool" in ends[0].result
    assert result.stop_reason == "end_turn" and result.text == "ok"


async def test_a_model_that_raises_ends_the_turn_with_error_and_says_why(tmp_path: Path) -> None:
    class Failing(ScriptedBackend):
        async def stream(self, messages: Any, tools: Any, options: Any) -> Any:
            yield "Partly "
            raise ConnectionError("the model server went away")

    loop = AgentLoop(Failing([]), {}, Box(tmp_path))
    events: list[AgentEvent] = []
    result = await loop.run(Conversation(), TurnRequest(prompt="go"), _never_asked, events.append)
    assert result.stop_reason == "error" and result.text == "Partly "
    notes = [e.text for e in events if isinstance(e, StatusNote)]
    assert any("the model server went away" in n for n in notes), notes
