"""What the loop tells memory: one checkpoint before the first change of a turn, an execution
record before each call, who decided, and a refusal that stops the call (fail closed)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from engine.approvals import ApprovalOutcome, ApprovalRequest, Decider, Decision
from engine.backends.base import Message
from engine.backends.scripted import ScriptedBackend, ScriptedTurn
from engine.gate import GatePolicy
from engine.hooks import TurnHooks
from engine.loop import AgentLoop, Conversation, TurnRequest
from engine.tools import BUILTIN_TOOLS
from engine.tools.base import Tool, ToolOutcome
from engine.turns import ToolCallRecord
from sandbox.box import Box


def call(name: str, **arguments: Any) -> str:
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


class Recorder(TurnHooks):
    def __init__(self, refuse_change: str | None = None, refuse_run: str | None = None) -> None:
        self.log: list[tuple[str, ...]] = []
        self.messages: list[Message] = []
        self.refuse_change = refuse_change
        self.refuse_run = refuse_run

    def message(self, message: Message) -> None:
        self.messages.append(message)

    def approval_requested(self, call: ToolCallRecord, reason: str) -> None:
        self.log.append(("asked", call.name, reason))

    def approval(
        self,
        call: ToolCallRecord,
        decision: Decision,
        decided_by: Decider,
        *,
        message: str | None = None,
        rule_id: str | None = None,
    ) -> None:
        self.log.append(("approval", call.name, decision, decided_by))

    async def before_first_change(self, call: ToolCallRecord) -> str | None:
        self.log.append(("checkpoint", call.name))
        return self.refuse_change

    async def before_run(
        self, call: ToolCallRecord, tool: Tool, decided_by: Decider, bypass: bool
    ) -> str | None:
        self.log.append(("run", call.name, decided_by))
        return self.refuse_run

    def after_run(self, call: ToolCallRecord, outcome: ToolOutcome, seconds: float) -> None:
        self.log.append(("ran", call.name))

    def call_ended(self, call: ToolCallRecord, result: str) -> None:
        self.log.append(("ended", call.name, call.status))


async def run_turn(
    workspace: Path,
    turns: list[str],
    hooks: TurnHooks,
    *,
    policy: GatePolicy | None = None,
    answers: list[ApprovalOutcome] | None = None,
    conversation: Conversation | None = None,
) -> Conversation:
    pending = list(answers or [])

    async def approve(_request: ApprovalRequest) -> ApprovalOutcome:
        return pending.pop(0)

    conversation = conversation or Conversation()
    loop = AgentLoop(
        ScriptedBackend([ScriptedTurn(t) for t in turns]), BUILTIN_TOOLS, Box(workspace)
    )
    await loop.run(
        conversation,
        TurnRequest(prompt="go", policy=policy or GatePolicy()),
        approve,
        lambda _event: None,
        hooks=hooks,
    )
    return conversation


async def test_one_checkpoint_before_the_first_change_and_none_for_reading(
    tmp_path: Path,
) -> None:
    hooks = Recorder()
    turns = [
        call("list_files") + call("terminal", command="echo a > a.txt"),
        call("python", code="open('b.txt', 'w').write('b')"),
        "Done.",
    ]
    allow = ApprovalOutcome("allow", via="toolConfirm")
    conversation = await run_turn(tmp_path, turns, hooks, answers=[allow, allow])
    assert hooks.log == [
        ("approval", "list_files", "allow", "not_required"),
        ("run", "list_files", "not_required"),
        ("ran", "list_files"),
        ("ended", "list_files", "completed"),
        ("asked", "terminal", "code_execution"),
        ("approval", "terminal", "allow", "toolConfirm"),
        ("checkpoint", "terminal"),
        ("run", "terminal", "toolConfirm"),
        ("ran", "terminal"),
        ("ended", "terminal", "completed"),
        ("asked", "python", "code_execution"),
        ("approval", "python", "allow", "toolConfirm"),
        ("run", "python", "toolConfirm"),
        ("ran", "python"),
        ("ended", "python", "completed"),
    ]
    assert hooks.messages == conversation.messages  # every message reached memory, in order


async def test_a_refused_checkpoint_or_audit_record_means_the_call_does_not_run(
    tmp_path: Path,
) -> None:
    for hooks in (Recorder(refuse_change="no checkpoint"), Recorder(refuse_run="no audit")):
        conversation = await run_turn(
            tmp_path,
            [call("terminal", command="touch ran.txt"), "Ok."],
            hooks,
            answers=[ApprovalOutcome("allow")],
        )
        assert not (tmp_path / "ran.txt").exists()
        assert ("ran", "terminal") not in hooks.log
        assert ("ended", "terminal", "failed") in hooks.log
        (result,) = [m for m in conversation.messages if m.role == "tool"]
        assert result.content.startswith("The tool call was not run: no ")


async def test_who_decided_a_grant_bypass_a_denial_and_a_timeout(tmp_path: Path) -> None:
    hooks = Recorder()
    conversation = await run_turn(
        tmp_path,
        [call("terminal", command="echo 1"), call("terminal", command="echo 2"), "Ok."],
        hooks,
        answers=[ApprovalOutcome("allow_session", via="showMessageRequest")],
    )
    decided = [entry[1:] for entry in hooks.log if entry[0] == "approval"]
    assert decided == [
        ("terminal", "allow_session", "showMessageRequest"),
        ("terminal", "allow", "session_grant"),
    ]
    assert conversation.allowed_tools == {"terminal"}

    hooks = Recorder()
    await run_turn(
        tmp_path,
        [call("terminal", command="echo 3"), "Ok."],
        hooks,
        policy=GatePolicy(bypass_permissions=True),
    )
    assert ("approval", "terminal", "allow", "bypass") in hooks.log

    hooks = Recorder()
    await run_turn(
        tmp_path,
        [call("terminal", command="echo 4"), call("terminal", command="echo 5"), "Ok."],
        hooks,
        answers=[ApprovalOutcome("deny"), ApprovalOutcome("timed_out", "1 seconds")],
    )
    decided = [entry[1:] for entry in hooks.log if entry[0] == "approval"]
    assert decided == [("terminal", "deny", "approver"), ("terminal", "timed_out", "timeout")]
    assert not any(entry[0] in ("checkpoint", "run") for entry in hooks.log)
