"""The agent loop end to end over the scripted model and the real built-in tools.

Commands really run (through the sandbox) in a temporary workspace, so "did it run?" is answered by
looking at the files a command leaves behind, the way a user would.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from engine.backends.base import GenerationOptions, Message
from engine.backends.scripted import ScriptedBackend, ScriptedTurn
from engine.events import AgentEvent, ContentDelta, ToolEnded, ToolOutput, ToolStarted
from engine.gate import GatePolicy
from engine.loop import (
    DENIED_TEXT,
    AgentLoop,
    ApprovalOutcome,
    ApprovalRequest,
    Conversation,
    TurnControl,
    TurnRequest,
    TurnResult,
)
from engine.tools import BUILTIN_TOOLS
from sandbox.box import Box

HANG_GUARD = 30.0  # seconds; only stops a broken test from hanging, never asserted on

ALLOW = ApprovalOutcome("allow")
ALLOW_SESSION = ApprovalOutcome("allow_session")
NO_CODE_PROMPTS = GatePolicy(confirm_tool_calls=False, confirm_code_execution=False)


# -- helpers --------------------------------------------------------------------------------------


def call(name: str, **arguments: Any) -> str:
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


def append(line: str, file: str = "out.txt") -> str:
    """A terminal call that appends ``line`` to ``file`` and prints it."""
    return call("terminal", command=f"echo {line} | tee -a {file}")


def python_append(line: str, file: str = "py.txt") -> str:
    code = (
        f"with open({file!r}, 'a') as f:\n    f.write({line + chr(10)!r})\nprint('wrote', {line!r})"
    )
    return call("python", code=code)


def lines(path: Path) -> list[str]:
    """The lines of a file a command wrote; [] when it was never written."""
    return path.read_text().splitlines() if path.exists() else []


def tool_messages(conversation: Conversation) -> list[Message]:
    """What the model was told about its tool calls."""
    return [m for m in conversation.messages if m.role == "tool"]


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return True
    return stat[stat.rfind(b")") + 2 :][:1] != b"Z"  # a zombie is dead, just not reaped


@dataclass(frozen=True)
class Asked:
    request: ApprovalRequest


@dataclass(frozen=True)
class Answered:
    tool_call_id: str


Answer = ApprovalOutcome | BaseException


class Harness:
    """One workspace, a recording approver answering from a queue, and a timeline of everything."""

    def __init__(self, workspace: Path) -> None:
        self.workspace = workspace
        self.timeline: list[AgentEvent | Asked | Answered] = []
        self.asked: list[ApprovalRequest] = []
        self.answers: list[Answer] = []
        self.backend = ScriptedBackend([])
        self.conversation = Conversation()

    def emit(self, event: AgentEvent) -> None:
        self.timeline.append(event)

    async def approve(self, request: ApprovalRequest) -> ApprovalOutcome:
        self.timeline.append(Asked(request))
        self.asked.append(request)
        if not self.answers:
            pytest.fail(f"the user was asked about {request.name} {request.arguments} unexpectedly")
        answer = self.answers.pop(0)
        self.timeline.append(Answered(request.tool_call_id))
        if isinstance(answer, BaseException):
            raise answer
        return answer

    def events(self, kind: type[Any]) -> list[Any]:
        return [e for e in self.timeline if isinstance(e, kind)]

    def loop(self, turns: Sequence[str]) -> AgentLoop:
        self.backend = ScriptedBackend([ScriptedTurn(t) for t in turns])
        return AgentLoop(self.backend, BUILTIN_TOOLS, Box(self.workspace))

    async def run(
        self,
        *turns: str,
        answers: Sequence[Answer] = (),
        conversation: Conversation | None = None,
        **request_fields: Any,
    ) -> TurnResult:
        self.answers = list(answers)
        if conversation is not None:
            self.conversation = conversation
        loop = self.loop(turns)
        request = TurnRequest("please do it", **request_fields)
        result = await asyncio.wait_for(
            loop.run(self.conversation, request, self.approve, self.emit), HANG_GUARD
        )
        assert self.answers == [], "some expected approval requests never came"
        return result

    def statuses(self, result: TurnResult) -> list[str]:
        return [r.status for r in result.tool_calls]


@pytest.fixture
def h(tmp_path: Path) -> Harness:
    return Harness(tmp_path)


# -- allow / deny ---------------------------------------------------------------------------------


async def test_allowed_command_runs_in_the_workspace(h: Harness) -> None:
    result = await h.run(append("hello"), "Done.", answers=[ALLOW])
    assert lines(h.workspace / "out.txt") == ["hello"]
    assert [(a.name, a.arguments, a.reason) for a in h.asked] == [
        ("terminal", {"command": "echo hello | tee -a out.txt"}, "code_execution")
    ]
    [record] = result.tool_calls
    assert (record.status, record.exit_code) == ("completed", 0)
    [told] = tool_messages(h.conversation)
    assert "hello" in told.content
    assert told.tool_call_id == record.id
    assert (result.stop_reason, result.text) == ("end_turn", "Done.")


async def test_allowed_python_code_runs_in_the_workspace(h: Harness) -> None:
    result = await h.run(python_append("from-python"), "Done.", answers=[ALLOW])
    assert lines(h.workspace / "py.txt") == ["from-python"]
    assert [a.name for a in h.asked] == ["python"]
    assert h.statuses(result) == ["completed"]
    assert "wrote from-python" in tool_messages(h.conversation)[0].content


@pytest.mark.parametrize("message", [None, "Don't touch my files, use git clean instead"])
async def test_denied_command_does_not_run_and_the_model_is_told(
    h: Harness, message: str | None
) -> None:
    result = await h.run(
        append("hello"), "OK, I will not.", answers=[ApprovalOutcome("deny", message)]
    )
    assert not (h.workspace / "out.txt").exists()
    assert h.statuses(result) == ["denied"]
    [told] = tool_messages(h.conversation)
    assert told.content.startswith("The user denied this tool call.")
    if message is None:
        assert told.content == DENIED_TEXT
    else:
        assert message in told.content
    # the model is given its next turn to react
    assert result.text == "OK, I will not."
    assert result.stop_reason == "end_turn"


@pytest.mark.parametrize(
    ("outcome", "status", "told_fragment"),
    [
        pytest.param(
            ApprovalOutcome("timed_out", "300 seconds"),
            "timed_out",
            "no approval arrived within 300 seconds",
            id="timed_out",
        ),
        pytest.param(
            ApprovalOutcome("cancelled"),
            "cancelled",
            "cancelled before it was approved",
            id="cancelled",
        ),
        pytest.param(
            ApprovalOutcome("failed", "the editor answered with an error"),
            "denied",
            "the editor answered with an error",
            id="failed",
        ),
    ],
)
async def test_approval_that_is_not_a_yes_never_runs_the_command(
    h: Harness, outcome: ApprovalOutcome, status: str, told_fragment: str
) -> None:
    result = await h.run(append("hello"), "Understood.", answers=[outcome])
    assert not (h.workspace / "out.txt").exists()
    assert h.statuses(result) == [status]
    [told] = tool_messages(h.conversation)
    assert told_fragment in told.content
    assert told.content != DENIED_TEXT
    assert not h.events(ToolOutput)
    [ended] = h.events(ToolEnded)
    assert (ended.status, ended.result, ended.exit_code) == (status, told.content, None)


async def test_model_can_tell_timeout_cancel_and_failure_apart(h: Harness) -> None:
    turn = append("one") + append("two") + append("three")
    result = await h.run(
        turn,
        "Understood.",
        answers=[
            ApprovalOutcome("timed_out", "300 seconds"),
            ApprovalOutcome("cancelled"),
            ApprovalOutcome("failed", "the editor could not be asked"),
        ],
    )
    assert not (h.workspace / "out.txt").exists()
    assert h.statuses(result) == ["timed_out", "cancelled", "denied"]
    texts = [m.content for m in tool_messages(h.conversation)]
    assert len(set(texts)) == 3
    assert DENIED_TEXT not in texts


async def test_approval_callback_that_crashes_fails_closed(h: Harness) -> None:
    result = await h.run(
        append("hello"), "Hm.", answers=[RuntimeError("editor connection dropped")]
    )
    assert not (h.workspace / "out.txt").exists()
    assert h.statuses(result) == ["denied"]
    [told] = tool_messages(h.conversation)
    assert told.content.startswith("The tool call was not run")
    assert "editor connection dropped" in told.content
    assert result.stop_reason == "end_turn"


# -- allow for the session ------------------------------------------------------------------------


async def test_allow_for_session_grants_the_proposed_rule_not_the_whole_tool(h: Harness) -> None:
    conversation = Conversation()
    await h.run(
        call("terminal", command="echo A1 >> out.txt"),  # proposed: `echo *`
        call("terminal", command="echo B2 >> out.txt"),  # the grant allows it: not asked
        call("terminal", command="touch other.txt"),  # same tool, not the rule: asked
        python_append("p"),  # another tool: asked
        "Done.",
        answers=[ALLOW_SESSION, ALLOW, ALLOW],
        conversation=conversation,
    )
    assert [a.name for a in h.asked] == ["terminal", "terminal", "python"]
    assert [r.pattern for r in conversation.grants] == ["echo *"]
    assert conversation.grants[0].approved_sha256 == h.asked[0].content_sha256
    assert lines(h.workspace / "out.txt") == ["A1", "B2"]
    assert lines(h.workspace / "py.txt") == ["p"]

    # a later request in the same conversation still runs what the grant allows without asking
    await h.run(call("terminal", command="echo C3 >> out.txt"), "Done.", conversation=conversation)
    assert len(h.asked) == 3
    assert lines(h.workspace / "out.txt") == ["A1", "B2", "C3"]

    # but not a compound command whose other part the grant does not allow
    await h.run(append("x"), "Done.", answers=[ALLOW], conversation=conversation)
    assert len(h.asked) == 4

    # a new conversation asks again
    await h.run(
        call("terminal", command="echo D4 >> out.txt"),
        "Done.",
        answers=[ALLOW],
        conversation=Conversation(),
    )
    assert len(h.asked) == 5
    assert lines(h.workspace / "out.txt") == ["A1", "B2", "C3", "x", "D4"]


# -- several calls, repeats -----------------------------------------------------------------------


async def test_each_call_in_one_model_turn_is_approved_on_its_own(h: Harness) -> None:
    turn = "Two things. " + append("first") + append("second")
    result = await h.run(turn, "Done.", answers=[ApprovalOutcome("deny"), ALLOW])
    assert [a.arguments["command"] for a in h.asked] == [
        "echo first | tee -a out.txt",
        "echo second | tee -a out.txt",
    ]
    assert h.asked[0].tool_call_id != h.asked[1].tool_call_id
    assert lines(h.workspace / "out.txt") == ["second"]
    assert h.statuses(result) == ["denied", "completed"]


async def test_denied_call_asked_again_later_is_asked_again(h: Harness) -> None:
    result = await h.run(
        append("again"), append("again"), "Done.", answers=[ApprovalOutcome("deny"), ALLOW]
    )
    assert len(h.asked) == 2
    assert lines(h.workspace / "out.txt") == ["again"]
    assert h.statuses(result) == ["denied", "completed"]


async def test_identical_call_that_already_succeeded_is_not_run_twice(h: Harness) -> None:
    conversation = Conversation()
    result = await h.run(
        append("once"), append("once"), "Done.", answers=[ALLOW], conversation=conversation
    )
    assert lines(h.workspace / "out.txt") == ["once"]
    assert len(h.asked) == 1  # the repeat is not even asked about
    assert h.statuses(result) == ["completed", "failed"]
    assert "Skipped" in tool_messages(conversation)[1].content

    # a new request is a new instruction: the same call runs again
    await h.run(append("once"), "Done.", answers=[ALLOW], conversation=conversation)
    assert lines(h.workspace / "out.txt") == ["once", "once"]


# -- limits and tool availability -----------------------------------------------------------------


async def test_no_tool_calls_allowed_means_nothing_runs_and_nobody_is_asked(h: Harness) -> None:
    result = await h.run(append("hello"), "Never reached.", max_tool_calls=0)
    assert result.stop_reason == "tool_limit"
    assert result.tool_calls == []
    assert h.asked == []
    assert not (h.workspace / "out.txt").exists()
    assert not h.events(ToolStarted)
    assert h.backend.remaining_turns == 1


async def test_tool_limit_stops_after_the_allowed_number_of_calls(h: Harness) -> None:
    result = await h.run(
        append("first") + append("second"), "Never reached.", answers=[ALLOW], max_tool_calls=1
    )
    assert result.stop_reason == "tool_limit"
    assert lines(h.workspace / "out.txt") == ["first"]
    assert h.statuses(result) == ["completed"]
    assert len(h.asked) == 1
    assert h.backend.remaining_turns == 1


async def test_with_tools_disabled_call_markup_is_just_text(h: Harness) -> None:
    turn = "Here is how: " + append("hello")
    result = await h.run(turn, tools_enabled=False)
    assert result.stop_reason == "end_turn"
    assert result.tool_calls == []
    assert result.text == turn
    assert h.asked == []
    assert not (h.workspace / "out.txt").exists()


async def test_call_of_a_tool_not_enabled_fails_listing_the_available_tools(h: Harness) -> None:
    result = await h.run(
        append("hello"),
        "Sorry.",
        enabled_tools=frozenset({"read_file", "list_files"}),
        policy=GatePolicy(confirm_tool_calls=True),
    )
    assert h.asked == []
    assert not (h.workspace / "out.txt").exists()
    assert h.statuses(result) == ["failed"]
    [told] = tool_messages(h.conversation)
    assert "'terminal'" in told.content
    assert "list_files, read_file" in told.content


@pytest.mark.parametrize(
    ("turn", "told_fragment"),
    [
        pytest.param(call("delete_everything", path="/"), "'delete_everything'", id="unknown-tool"),
        pytest.param(
            '<tool_call>{"name": "terminal", "arguments": {"command": "echo hi >> out.txt"'
            "</tool_call>",
            "Could not parse tool call",
            id="malformed-json",
        ),
        pytest.param(
            '<tool_call>{"arguments": {"command": "echo hi >> out.txt"}}</tool_call>',
            'missing "name"',
            id="missing-name",
        ),
        pytest.param(
            call("terminal", cmd="echo hi >> out.txt"),
            "Invalid arguments for terminal",
            id="bad-args",
        ),
        pytest.param(call("terminal", command=""), "Invalid arguments for terminal", id="empty"),
        pytest.param(
            call("terminal", command="echo hi >> out.txt", sudo=True),
            "sudo",
            id="extra-argument",
        ),
    ],
)
async def test_broken_call_fails_without_asking_and_the_model_sees_why(
    h: Harness, turn: str, told_fragment: str
) -> None:
    result = await h.run(turn, "Let me fix that.", policy=GatePolicy(confirm_tool_calls=True))
    assert h.asked == []
    assert not (h.workspace / "out.txt").exists()
    assert h.statuses(result) == ["failed"]
    [told] = tool_messages(h.conversation)
    assert told_fragment in told.content
    [ended] = h.events(ToolEnded)
    assert (ended.status, ended.result) == ("failed", told.content)
    assert result.text == "Let me fix that."  # the model got its turn to fix it


async def test_bypass_runs_code_without_asking(h: Harness) -> None:
    result = await h.run(
        python_append("bypassed"),
        append("bypassed"),
        "Done.",
        policy=GatePolicy(
            confirm_tool_calls=True, confirm_code_execution=True, bypass_permissions=True
        ),
    )
    assert h.asked == []
    assert lines(h.workspace / "py.txt") == ["bypassed"]
    assert lines(h.workspace / "out.txt") == ["bypassed"]
    assert h.statuses(result) == ["completed", "completed"]
    assert all(not e.awaiting_confirmation for e in h.events(ToolStarted))


async def test_reading_files_is_not_asked_about_by_default(h: Harness) -> None:
    (h.workspace / "notes.txt").write_text("remember the milk\n")
    result = await h.run(call("read_file", path="notes.txt"), "It says milk.")
    assert h.asked == []
    assert h.statuses(result) == ["completed"]
    assert "remember the milk" in tool_messages(h.conversation)[0].content


# -- what the user sees ---------------------------------------------------------------------------


async def test_answer_text_is_the_streamed_text_without_call_markup(h: Harness) -> None:
    (h.workspace / "notes.txt").write_text("hi\n")
    result = await h.run(
        "Let me check. " + call("list_files") + " Looking now.",
        "<think>it is there</think>All done: notes.txt exists.",
    )
    streamed = "".join(e.text for e in h.events(ContentDelta))
    assert result.text == streamed
    assert result.text == "Let me check.  Looking now.All done: notes.txt exists."
    for markup in ("<tool_call>", "</tool_call>", '"name"', "list_files", "<think>", "it is there"):
        assert markup not in result.text


async def test_user_sees_the_call_before_being_asked_and_no_output_before_answering(
    h: Harness,
) -> None:
    (h.workspace / "notes.txt").write_text("hi\n")
    await h.run(call("read_file", path="notes.txt") + append("visible"), "Done.", answers=[ALLOW])
    started = h.events(ToolStarted)
    assert [(s.name, s.awaiting_confirmation) for s in started] == [
        ("read_file", False),
        ("terminal", True),
    ]
    [asked] = h.events(Asked)
    assert asked.request.tool_call_id == started[1].tool_call_id
    timeline = h.timeline
    asked_at = timeline.index(asked)
    answered_at = timeline.index(Answered(asked.request.tool_call_id))
    assert timeline.index(started[1]) < asked_at
    terminal_outputs = [
        i
        for i, e in enumerate(timeline)
        if isinstance(e, ToolOutput) and e.tool_call_id == started[1].tool_call_id
    ]
    assert terminal_outputs, "the command's output was not streamed"
    assert all(i > answered_at for i in terminal_outputs)


async def test_model_cut_off_by_max_tokens_ends_with_max_tokens(h: Harness) -> None:
    result = await h.run("one two three four five", options=GenerationOptions(max_tokens=3))
    assert result.stop_reason == "max_tokens"
    assert result.text == "one two three"


async def test_model_cut_off_in_the_middle_of_a_tool_call_ends_with_max_tokens(
    h: Harness,
) -> None:
    result = await h.run(append("hello"), "Never reached.", options=GenerationOptions(max_tokens=5))
    assert not (h.workspace / "out.txt").exists()
    assert result.stop_reason == "max_tokens"
    assert h.backend.remaining_turns == 1


# -- cancellation ---------------------------------------------------------------------------------


class NeverAnswers:
    """An approver whose user never answers; records when the prompt is withdrawn."""

    def __init__(self) -> None:
        self.asked = asyncio.Event()
        self.withdrawn: list[str] = []

    async def __call__(self, request: ApprovalRequest) -> ApprovalOutcome:
        self.asked.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.withdrawn.append(request.tool_call_id)
            raise
        raise AssertionError("unreachable")


async def test_cancel_while_waiting_for_approval_returns_cancelled(tmp_path: Path) -> None:
    approver = NeverAnswers()
    events: list[AgentEvent] = []
    conversation = Conversation()
    backend = ScriptedBackend([ScriptedTurn(append("hello")), ScriptedTurn("Never reached.")])
    loop = AgentLoop(backend, BUILTIN_TOOLS, Box(tmp_path))
    control = TurnControl()
    task = asyncio.create_task(
        loop.run(conversation, TurnRequest("go"), approver, events.append, control)
    )
    control.bind(task)
    async with asyncio.timeout(HANG_GUARD):
        await approver.asked.wait()
    assert control.cancel() is True

    result = await asyncio.wait_for(task, HANG_GUARD)
    assert result.stop_reason == "cancelled"
    [record] = result.tool_calls
    assert record.status == "cancelled"
    assert not (tmp_path / "out.txt").exists()
    assert approver.withdrawn == [record.id]  # the prompt is taken back
    assert [e.status for e in events if isinstance(e, ToolEnded)] == ["cancelled"]
    assert control.cancel() is False  # nothing is running any more
    assert backend.remaining_turns == 1

    # the conversation can go on after a cancel
    follow_up = AgentLoop(ScriptedBackend([ScriptedTurn("Fine.")]), BUILTIN_TOOLS, Box(tmp_path))
    again = await asyncio.wait_for(
        follow_up.run(conversation, TurnRequest("never mind"), approver, events.append),
        HANG_GUARD,
    )
    assert (again.stop_reason, again.text) == ("end_turn", "Fine.")


@pytest.mark.parametrize("with_control", [False, True])
async def test_cancel_not_requested_through_the_control_propagates(
    tmp_path: Path, with_control: bool
) -> None:
    approver = NeverAnswers()
    loop = AgentLoop(ScriptedBackend([ScriptedTurn(append("hello"))]), BUILTIN_TOOLS, Box(tmp_path))
    control = TurnControl() if with_control else None
    task = asyncio.create_task(
        loop.run(Conversation(), TurnRequest("go"), approver, lambda _e: None, control)
    )
    if control is not None:
        control.bind(task)
    async with asyncio.timeout(HANG_GUARD):
        await approver.asked.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not (tmp_path / "out.txt").exists()
    assert len(approver.withdrawn) == 1


def read_pid(path: Path) -> int:
    return int(path.read_text().strip())


async def test_cancel_while_a_command_runs_kills_it_and_returns_cancelled(tmp_path: Path) -> None:
    started = asyncio.Event()
    events: list[AgentEvent] = []

    def emit(event: AgentEvent) -> None:
        events.append(event)
        if isinstance(event, ToolOutput):
            started.set()

    command = "echo $$ > pid.txt; echo started; exec sleep 30"
    loop = AgentLoop(
        ScriptedBackend([ScriptedTurn(call("terminal", command=command)), ScriptedTurn("x")]),
        BUILTIN_TOOLS,
        Box(tmp_path),
    )
    control = TurnControl()

    async def never_asked(request: ApprovalRequest) -> ApprovalOutcome:
        raise AssertionError(f"asked about {request.name} although code needs no confirmation")

    task = asyncio.create_task(
        loop.run(
            Conversation(), TurnRequest("go", policy=NO_CODE_PROMPTS), never_asked, emit, control
        )
    )
    control.bind(task)
    async with asyncio.timeout(HANG_GUARD):
        await started.wait()
    pid = read_pid(tmp_path / "pid.txt")
    try:
        assert process_alive(pid)
        assert control.cancel() is True
        # far sooner than the 30 s sleep would end by itself
        result = await asyncio.wait_for(task, 10)
        assert result.stop_reason == "cancelled"
        [record] = result.tool_calls
        assert record.status == "cancelled"
        assert not process_alive(pid)
    finally:
        if process_alive(pid):  # never leave a stray sleep behind a failed test
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
