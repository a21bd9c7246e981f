"""The answer after a tool result: no tool markup ever reaches ``content``, a small model answers
from one round of results without tools, and that turn is shown the results in plain words."""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from engine.backends.base import GenerationOptions, Message, ToolSpec
from engine.backends.scripted import ScriptedBackend, ScriptedTurn
from engine.events import AgentEvent, ContentDelta, StatusNote
from engine.gate import GatePolicy
from engine.loop import AgentLoop, ApprovalOutcome, ApprovalRequest, Conversation, TurnRequest
from engine.prompting import (
    ANSWER_FROM_RESULTS,
    ANSWER_WITHOUT_RESULTS,
    chat_messages,
    fit_to_context,
)
from engine.toolcalls import TextPiece, ToolCallParser
from engine.toolcalls.markup import call_markup, stop_markup
from engine.tools import BUILTIN_TOOLS
from sandbox.box import Box

MARKUP = (
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
    "<|python_tag|>",
    "<|eom_id|>",
    "<|eot_id|>",
    "<end_function_call>",
    "</function>",
)
NO_PROMPTS = GatePolicy(confirm_tool_calls=False, confirm_code_execution=False)
WC = call_markup("terminal", {"command": "wc -l *.py"})

# What small models were seen to write after a tool result.
IMITATIONS = [
    "The output is:\n<tool_response>\nterminal: 1.50, 2.34\n</tool_response>",
    "There are 9 lines.</tool_response>",
    "9 and 11 lines.\n</tool_call>\n",
    "<tool_response>\nterminal: 9 greet.py",  # never closed
    'Done. <|python_tag|>{"name": "terminal", "parameters": {"command": "ls"}}<|eom_id|>',
    f"Let me check again: {WC} ok",
    "The files: 9 and 11.<|eot_id|>",
    "call:terminal{}<end_function_call> and </function>",
]


def content_of(text: str, seed: int) -> str:
    """Feed ``text`` in random pieces with tools enabled; the content that comes out."""
    rng = random.Random(seed)
    parser = ToolCallParser()
    events = []
    pos = 0
    while pos < len(text):
        step = rng.randint(1, 7)
        events += parser.feed(text[pos : pos + step])
        pos += step
    events += parser.finish()
    return "".join(e.text for e in events if isinstance(e, TextPiece) and e.kind == "content")


@pytest.mark.parametrize("text", IMITATIONS)
def test_no_tool_markup_ever_reaches_content(text: str) -> None:
    for seed in range(20):
        content = content_of(text, seed)
        assert not [tag for tag in MARKUP if tag in content], (text, content)


def test_imitated_results_are_dropped_whole_and_text_around_them_kept() -> None:
    assert content_of(IMITATIONS[0], 0) == "The output is:\n"
    assert content_of(IMITATIONS[1], 0) == "There are 9 lines."
    assert content_of("a <tool_response>x</tool_response> b", 1) == "a  b"


def test_stop_sequences_never_cut_a_call_the_turn_may_make() -> None:
    assert "</tool_call>" not in stop_markup(calls=True)
    assert "<tool_response>" in stop_markup(calls=True)
    assert {"<tool_call>", "</tool_response>"} <= set(stop_markup(calls=False))


# -- the loop -----------------------------------------------------------------------------------


class RecordingBackend(ScriptedBackend):
    """A scripted model that remembers which tools each turn was offered."""

    def __init__(self, turns: Sequence[str]) -> None:
        super().__init__([ScriptedTurn(t) for t in turns])
        self.offered: list[list[str]] = []

    def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], options: GenerationOptions
    ) -> Any:
        self.offered.append([t.name for t in tools])
        return super().stream(messages, tools, options)


async def run(
    tmp_path: Path, turns: list[str], **request: Any
) -> tuple[Any, list[AgentEvent], Any]:
    (tmp_path / "greet.py").write_text("a\nb\n")
    backend = RecordingBackend(turns)
    events: list[AgentEvent] = []

    async def approve(_request: ApprovalRequest) -> ApprovalOutcome:
        return ApprovalOutcome("allow")

    loop = AgentLoop(backend, BUILTIN_TOOLS, Box(tmp_path))
    conversation = Conversation()
    turn = TurnRequest("How many lines?", policy=NO_PROMPTS, **request)
    result = await loop.run(conversation, turn, approve, events.append)
    return result, events, (backend, conversation)


async def test_markup_in_the_answer_after_a_result_never_reaches_the_text(tmp_path: Path) -> None:
    answer = "greet.py has 2 lines.</tool_response>\n<tool_response>\nterminal: 7\n</tool_response>"
    result, events, _ = await run(tmp_path, [WC, answer])
    assert result.text == "greet.py has 2 lines.\n"
    streamed = "".join(e.text for e in events if isinstance(e, ContentDelta))
    assert streamed == result.text


async def test_a_small_model_answers_after_one_round_without_tools(tmp_path: Path) -> None:
    result, _, (backend, conversation) = await run(
        tmp_path, [WC, "greet.py has 2 lines."], tool_rounds=1
    )
    assert result.stop_reason == "end_turn" and result.text == "greet.py has 2 lines."
    assert backend.offered[0] and backend.offered[1] == []
    tool = next(m for m in conversation.messages if m.role == "tool")
    assert tool.status == "completed"


async def test_a_call_in_the_answer_turn_is_not_run_and_leaves_no_markup(tmp_path: Path) -> None:
    result, events, _ = await run(tmp_path, [WC, f"Again: {WC}"], tool_rounds=1)
    assert result.stop_reason == "tool_limit"
    assert result.text == "Again: "
    assert len(result.tool_calls) == 1  # only the first round ran
    assert any("answers after 1 round" in e.text for e in events if isinstance(e, StatusNote))


async def test_without_a_round_limit_the_model_keeps_its_tools(tmp_path: Path) -> None:
    result, _, (backend, _) = await run(tmp_path, [WC, WC.replace("*.py", "greet.py"), "done"])
    assert result.text == "done" and len(result.tool_calls) == 2
    assert all(backend.offered)


# -- what the answer turn is shown ---------------------------------------------------------------

SPECS = [ToolSpec(t.name, t.description, t.parameters_schema()) for t in BUILTIN_TOOLS.values()]
HISTORY = [
    Message("user", "How many lines are in each Python file here?"),
    Message("assistant", f"Let me count.{WC}"),
    Message("tool", "  9 greet.py\n 11 stats.py\n 20 total\n", "terminal", "c1", "completed"),
]


def test_the_answer_turn_sees_no_markup_only_what_the_command_printed() -> None:
    chat = chat_messages(HISTORY, [])
    assert [m["role"] for m in chat] == ["system", "user", "assistant", "user"]
    assert not any(tag in m["content"] for m in chat for tag in MARKUP)
    assert "tool" not in chat[0]["content"].lower()
    assert chat[2]["content"] == "Let me count. I ran `wc -l *.py` in the terminal."
    assert chat[3]["content"] == (
        "The command `wc -l *.py` printed:\n```\n  9 greet.py\n 11 stats.py\n 20 total\n```\n"
        + ANSWER_FROM_RESULTS
    )


def test_with_tools_offered_results_keep_the_hermes_format() -> None:
    chat = chat_messages(HISTORY, SPECS)
    assert chat[-1]["content"].startswith("<tool_response>\nterminal:")
    assert "<tool_call>" in chat[0]["content"]


def test_calls_that_did_not_run_are_told_as_such() -> None:
    denied = Message("tool", "The user denied this tool call.", "terminal", "c1", "denied")
    chat = chat_messages([*HISTORY[:2], denied], [])
    assert chat[-1]["content"].startswith(
        "The command `wc -l *.py` was not run: The user denied this tool call."
    )
    assert chat[-1]["content"].endswith(ANSWER_WITHOUT_RESULTS)
    code = call_markup("python", {"code": "print(1)"})
    failed = Message("tool", "Traceback ...", "python", "c2", "failed")
    chat = chat_messages([HISTORY[0], Message("assistant", code), failed], [])
    assert "I ran this Python code:\n```python\nprint(1)\n```" in chat[2]["content"]
    assert chat[3]["content"].startswith("The Python code failed: Traceback")


def test_trimming_keeps_the_question_of_a_narrated_turn() -> None:
    older = [Message("user", "old"), Message("assistant", "old answer")]
    chat = chat_messages([*older, *HISTORY], [])
    kept, dropped = fit_to_context(chat, lambda c: len(c) <= 4)
    assert dropped == 2
    assert kept[1]["content"] == HISTORY[0].content
