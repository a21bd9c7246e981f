"""Approvals are bound to the request that asked for them, and odd input never breaks a turn.

Each test drives the real server over stdio with the scripted model."""

from __future__ import annotations

import asyncio
import re
import time
from typing import Any

from lsprotocol import types as lsp

from tests.e2e.conftest import (
    MESSAGE_REQUEST_CAPS,
    StartServer,
    tool_call,
)

TOUCH = tool_call("terminal", command="touch made.txt")


async def test_approval_requests_have_unguessable_ids_bound_to_their_approval(
    start_server: StartServer,
) -> None:
    other = tool_call("terminal", command="touch other.txt")
    peer = await start_server([TOUCH, other, "done"])
    await peer.chat(confirmToolCalls=True)
    assert len(peer.confirm_ids) == 2
    for msg_id, params in zip(peer.confirm_ids, peer.confirms, strict=True):
        assert not re.fullmatch(r"gatehouse-approval-\d+", str(msg_id))
        assert params["approvalId"] in str(msg_id)
        assert len(params["approvalId"]) >= 32
    assert peer.confirm_ids[0] != peer.confirm_ids[1]


async def test_an_answer_naming_another_approval_runs_nothing(start_server: StartServer) -> None:
    async def wrong_approval(_params: dict[str, Any]) -> Any:
        return {"decision": "allow", "approvalId": "an-approval-of-another-call"}

    peer = await start_server([TOUCH, "done"], answer=wrong_approval)
    result = await peer.chat()
    assert result["toolCalls"][0]["status"] == "denied"
    assert not (peer.workspace / "made.txt").exists()
    assert "another approval" in peer.of_type("tool_end")[0]["result"]


async def test_an_answer_echoing_its_own_approval_runs(start_server: StartServer) -> None:
    async def echo(params: dict[str, Any]) -> Any:
        return {"decision": "allow", "approvalId": params["approvalId"]}

    peer = await start_server([TOUCH, "done"], answer=echo)
    result = await peer.chat()
    assert result["toolCalls"][0]["status"] == "completed"
    assert (peer.workspace / "made.txt").exists()


async def test_an_editor_that_cancels_the_prompt_denies_at_once(start_server: StartServer) -> None:
    late = asyncio.Event()

    async def answer_late(_params: dict[str, Any]) -> Any:
        await late.wait()
        return {"decision": "allow"}  # after its own cancel: must run nothing

    peer = await start_server([TOUCH, "done"], answer=answer_late)
    pending = peer.send_chat()
    await peer.wait_for(lambda: len(peer.confirm_ids) == 1)
    started = time.monotonic()
    peer.client.protocol.notify(lsp.CANCEL_REQUEST, lsp.CancelParams(id=peer.confirm_ids[0]))
    result = await asyncio.wait_for(pending, 20)
    assert time.monotonic() - started < 10  # not confirmTimeoutSeconds (300 s)
    assert result["toolCalls"][0]["status"] == "denied"
    assert "cancelled the approval request" in peer.of_type("tool_end")[0]["result"]
    late.set()
    await peer.request("agent/status", {})  # the late reply has been read by now
    assert not (peer.workspace / "made.txt").exists()


async def test_a_nul_byte_in_a_command_fails_the_call_and_keeps_the_turn(
    start_server: StartServer,
) -> None:
    peer = await start_server([tool_call("terminal", command="echo a\x00b"), "still here"])
    result = await peer.chat()
    assert result["stopReason"] == "end_turn"
    assert result["text"] == "still here"
    assert [c["status"] for c in result["toolCalls"]] == ["failed"]
    starts, ends = peer.of_type("tool_start"), peer.of_type("tool_end")
    assert [s["toolCallId"] for s in starts] == [e["toolCallId"] for e in ends]


async def test_the_fallback_prompt_shows_hidden_characters(start_server: StartServer) -> None:
    sneaky = "touch hidden_ran.txt #\x1b[2K\x1b[1G  $ ls -la \u202e\u2066x\u2069"
    answers: list[dict[str, Any]] = []

    async def deny(params: dict[str, Any]) -> Any:
        answers.append(params)
        return lsp.MessageActionItem(title="Deny")

    peer = await start_server(
        [tool_call("terminal", command=sneaky), "ok"],
        capabilities=MESSAGE_REQUEST_CAPS,
        answer=deny,
    )
    await peer.chat()
    message = answers[0]["message"]
    for raw in ("\x1b", "\u202e", "\u2066", "\u2069"):
        assert raw not in message
    assert "\\x1b[2K" in message and "<U+202E>" in message and "<U+2069>" in message
    assert "hidden or control characters" in message
    assert answers[0]["actions"][0].title == "Deny"
    assert not (peer.workspace / "hidden_ran.txt").exists()
