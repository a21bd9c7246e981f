"""Approvals: each request is bound to one unguessable id, known before the editor is asked,
decided at most once, and every doubt (error, malformed answer, another approval's id, a cancel by
the editor, a timeout, a cancelled turn) means the call does not run."""

from __future__ import annotations

import asyncio
import re
from concurrent.futures import Future
from typing import Any

import pytest

from engine.approvals import ApprovalOutcome, ApprovalRequest
from engine.gate import GatePolicy
from engine.rules.book import RuleBook
from engine.rules.policy import decide
from engine.tools import BUILTIN_TOOLS
from sandbox.info import SandboxInfo
from server.approvals import (
    FALLBACK_MAX_LINES,
    Approvals,
    PromptSettings,
    message_request,
)
from server.transport import ClientCancelled

STRONG = SandboxInfo("strong", False, "bubblewrap")


def settings(style: str = "toolConfirm", timeout: float = 30) -> PromptSettings:
    return PromptSettings(style, STRONG, "/ws", timeout)  # type: ignore[arg-type]


DIGEST = "0" * 64


def request(command: str = "ls") -> ApprovalRequest:
    """What the loop asks about ``command`` with no rules: Deny, Allow once and, for a plain
    single command, the proposed rule for the session and for always."""
    arguments = {"command": command}
    verdict = decide(GatePolicy(), BUILTIN_TOOLS["terminal"], arguments, RuleBook().index, DIGEST)
    return ApprovalRequest(
        "call_1", "terminal", arguments, "code_execution", DIGEST, verdict.choices, verdict.unclear
    )


class FakeChannel:
    def __init__(self, approvals: Approvals | None = None) -> None:
        self.sent: list[tuple[str, Any, str]] = []
        self.replies: list[Future[Any]] = []
        self.withdrawn: list[str] = []
        self.approvals = approvals
        self.pending_when_sent: list[int] = []
        self._sent_event = asyncio.Event()

    async def wait_sent(self, count: int = 1) -> None:
        while len(self.sent) < count:
            self._sent_event.clear()
            await self._sent_event.wait()

    def send_request(self, method: str, params: Any = None, *, msg_id: str) -> Future[Any]:
        if self.approvals is not None:
            self.pending_when_sent.append(len(self.approvals))
        self.sent.append((method, params, msg_id))
        self._sent_event.set()
        reply: Future[Any] = Future()
        self.replies.append(reply)
        return reply

    def withdraw_request(self, msg_id: str) -> None:
        self.withdrawn.append(msg_id)


async def asked(approvals: Approvals, channel: FakeChannel, **kw: Any) -> asyncio.Task[Any]:
    task = asyncio.create_task(approvals.ask("s1", "s1:1", request(**kw), settings()))
    await channel.wait_sent()
    return task


async def test_each_approval_has_its_own_unguessable_request_id() -> None:
    channel = FakeChannel()
    approvals = Approvals(channel)
    tasks = [await asked(approvals, channel)]
    for _ in range(49):
        tasks.append(asyncio.create_task(approvals.ask("s1", "t", request(), settings())))
    await channel.wait_sent(50)
    ids = [msg_id for _m, _p, msg_id in channel.sent]
    assert len(set(ids)) == 50
    for _method, params, msg_id in channel.sent:
        approval_id = params["approvalId"]
        assert len(approval_id) >= 32 and re.fullmatch(r"[A-Za-z0-9_-]+", approval_id)
        assert msg_id.endswith(approval_id)  # the request id is as unguessable as the approval
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    assert len(approvals) == 0


async def test_the_approval_is_known_before_the_editor_is_asked() -> None:
    approvals = Approvals(FakeChannel())
    channel = FakeChannel(approvals)
    approvals._channel = channel
    task = await asked(approvals, channel)
    assert channel.pending_when_sent == [1]
    channel.replies[0].set_result({"decision": "allow"})
    assert (await task).decision == "allow"
    assert len(approvals) == 0


@pytest.mark.parametrize(
    ("reply", "decision", "why"),
    [
        ({"decision": "allow"}, "allow", None),
        ({"decision": "allow_session"}, "allow_session", None),
        ({"decision": "deny", "message": "not now"}, "deny", None),
        ({"decision": "yes"}, "failed", "malformed"),
        ({}, "failed", "malformed"),
        ("allow", "failed", "malformed"),
        ({"decision": "allow", "approvalId": "someone-elses"}, "failed", "another approval"),
    ],
)
async def test_answers_are_read_strictly(reply: Any, decision: str, why: str | None) -> None:
    channel = FakeChannel()
    approvals = Approvals(channel)
    task = await asked(approvals, channel)
    channel.replies[0].set_result(reply)
    outcome = await task
    assert outcome.decision == decision
    if why:
        assert why in (outcome.message or "")


async def test_an_answer_echoing_its_own_approval_id_is_accepted() -> None:
    channel = FakeChannel()
    approvals = Approvals(channel)
    task = await asked(approvals, channel)
    own = channel.sent[0][1]["approvalId"]
    channel.replies[0].set_result({"decision": "allow", "approvalId": own})
    assert (await task).decision == "allow"


async def test_an_error_reply_fails_closed() -> None:
    channel = FakeChannel()
    approvals = Approvals(channel)
    task = await asked(approvals, channel)
    channel.replies[0].set_exception(RuntimeError("boom"))
    outcome = await task
    assert outcome.decision == "failed"
    assert "error" in (outcome.message or "")


async def test_the_editor_cancelling_the_prompt_denies_at_once() -> None:
    channel = FakeChannel()
    approvals = Approvals(channel)
    task = await asked(approvals, channel)
    channel.replies[0].set_exception(ClientCancelled("gone"))
    outcome = await asyncio.wait_for(task, 2)  # not after confirmTimeoutSeconds (30 s here)
    assert outcome.decision == "failed"
    assert "cancelled" in (outcome.message or "")


async def test_an_unanswered_approval_times_out_is_withdrawn_and_a_late_allow_is_ignored() -> None:
    channel = FakeChannel()
    approvals = Approvals(channel)
    outcome = await approvals.ask("s1", "t", request(), settings(timeout=0.01))
    assert outcome == ApprovalOutcome("timed_out", "0.01 seconds")
    assert channel.withdrawn == [channel.sent[0][2]]
    channel.replies[0].set_result({"decision": "allow"})
    await asyncio.sleep(0.01)
    assert len(approvals) == 0


async def test_a_cancelled_turn_withdraws_its_approval() -> None:
    channel = FakeChannel()
    approvals = Approvals(channel)
    task = await asked(approvals, channel)
    other = asyncio.create_task(approvals.ask("s2", "t", request(), settings()))
    await channel.wait_sent(2)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert channel.withdrawn == [channel.sent[0][2]]
    assert [p.session_id for p in approvals.pending_for("s2")] == ["s2"]
    assert approvals.pending_for("s1") == []
    channel.replies[0].set_result({"decision": "allow"})  # late: runs nothing, breaks nothing
    channel.replies[1].set_result({"decision": "deny"})
    assert (await other).decision == "deny"


async def test_a_broken_connection_fails_closed() -> None:
    class Broken(FakeChannel):
        def send_request(self, method: str, params: Any = None, *, msg_id: str) -> Future[Any]:
            raise BrokenPipeError

    approvals = Approvals(Broken())
    outcome = await approvals.ask("s1", "t", request(), settings())
    assert outcome.decision == "failed"
    assert len(approvals) == 0


# --- the window/showMessageRequest fallback ----------------------------------------------------


def test_the_fallback_prompt_lists_deny_first_and_shows_the_whole_command() -> None:
    prompt = message_request(request("ls -la\nrm -rf build"), settings("showMessageRequest"))
    assert [a.title for a in prompt.actions or []] == ["Deny", "Allow once"]
    assert "ls -la\nrm -rf build" in prompt.message
    assert "isolation: strong" in prompt.message
    assert "network: off" in prompt.message


def test_the_fallback_prompt_shows_hidden_characters_and_says_so() -> None:
    sneaky = "touch hidden_ran.txt #\x1b[2K\x1b[1G  $ ls -la \u202e \u2066x\u2069"
    prompt = message_request(request(sneaky), settings("showMessageRequest"))
    assert "\x1b" not in prompt.message and "\u202e" not in prompt.message
    assert "\u2066" not in prompt.message and "\u2069" not in prompt.message
    assert "\\x1b[2K" in prompt.message
    assert "<U+202E>" in prompt.message and "<U+2066>" in prompt.message
    assert "hidden or control characters" in prompt.message


def test_code_too_long_for_the_fallback_prompt_can_only_be_denied() -> None:
    code = "\n".join(f"echo {i}" for i in range(FALLBACK_MAX_LINES + 5))
    prompt = message_request(request(code), settings("showMessageRequest"))
    assert [a.title for a in prompt.actions or []] == ["Deny"]
    assert "can only be denied" in prompt.message


@pytest.mark.parametrize(
    ("reply", "decision"),
    [
        (None, "deny"),
        ({"title": "Deny"}, "deny"),
        ({"title": "Allow once"}, "allow"),
        ({"title": "Allow `ls *` in this session"}, "allow_session"),
        ({"title": "Always allow `ls *` in this workspace"}, "allow"),
        ({"title": "Allow for session"}, "failed"),
        ({"title": "allow"}, "failed"),
        ({"title": "Yes please"}, "failed"),
    ],
)
async def test_fallback_answers(reply: Any, decision: str) -> None:
    channel = FakeChannel()
    approvals = Approvals(channel)
    task = asyncio.create_task(approvals.ask("s1", "t", request(), settings("showMessageRequest")))
    await channel.wait_sent()
    channel.replies[0].set_result(reply)
    assert (await task).decision == decision


def test_the_fallback_prompt_offers_the_scoped_choices_deny_first() -> None:
    prompt = message_request(request("npm test -- --watch"), settings("showMessageRequest"))
    assert [a.title for a in prompt.actions or []] == [
        "Deny",
        "Allow once",
        "Allow `npm test *` in this session",
        "Always allow `npm test *` in this workspace",
    ]


async def test_a_fallback_answer_naming_an_action_that_was_not_shown_fails_closed() -> None:
    code = "\n".join(f"echo {i}" for i in range(FALLBACK_MAX_LINES + 5))
    channel = FakeChannel()
    approvals = Approvals(channel)
    ask = approvals.ask("s1", "t", request(code), settings("showMessageRequest"))
    task = asyncio.create_task(ask)
    await channel.wait_sent()
    channel.replies[0].set_result({"title": "Allow once"})  # only Deny was shown
    assert (await task).decision == "failed"


async def test_a_client_that_knows_no_choices_gets_the_proposed_rule_for_allow_session() -> None:
    channel = FakeChannel()
    approvals = Approvals(channel)
    task = await asked(approvals, channel, command="pytest -q")
    params = channel.sent[0][1]
    assert [c["kind"] for c in params["choices"]] == [
        "deny",
        "allow_once",
        "allow_session",
        "allow_always",
    ]
    assert params["choices"][2]["rule"] == {
        "action": "allow",
        "tool": "terminal",
        "pattern": "pytest *",
    }
    assert params["contentSha256"] == DIGEST
    channel.replies[0].set_result({"decision": "allow_session"})
    outcome = await task
    assert outcome.choice is not None and outcome.choice.kind == "allow_session"
    assert outcome.choice.rule is not None and outcome.choice.rule.pattern == "pytest *"


async def test_allow_session_for_a_compound_command_allows_only_this_call() -> None:
    channel = FakeChannel()
    approvals = Approvals(channel)
    task = await asked(approvals, channel, command="pytest -q && curl x | sh")
    params = channel.sent[0][1]
    assert [c["kind"] for c in params["choices"]] == ["deny", "allow_once"]
    assert "starts a shell" in " ".join(params["unclear"])
    channel.replies[0].set_result({"decision": "allow_session"})
    outcome = await task
    assert outcome.decision == "allow"
    assert outcome.choice is not None and outcome.choice.kind == "allow_once"
