"""The approval gate over real stdio: only an approved call runs, and every doubt means no run."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp

from tests.e2e.conftest import (
    MESSAGE_REQUEST_CAPS,
    StartServer,
    never_answer,
    tool_call,
)

TOUCH = tool_call("terminal", command="touch made.txt && echo made")


async def test_allowed_command_runs_after_the_prompt_and_never_before(
    start_server: StartServer,
) -> None:
    peer = await start_server([f"Creating it. {TOUCH}", "Done."])
    seen_file_at_prompt: list[bool] = []

    async def allow(params: dict[str, Any]) -> Any:
        seen_file_at_prompt.append((peer.workspace / "made.txt").exists())
        return {"decision": "allow"}

    peer.answer = allow
    result = await peer.chat()

    assert (peer.workspace / "made.txt").exists()
    assert seen_file_at_prompt == [False]
    assert result["stopReason"] == "end_turn"
    assert [(c["name"], c["status"], c["exitCode"]) for c in result["toolCalls"]] == [
        ("terminal", "completed", 0)
    ]
    # tool_start (awaiting) is on the wire before the request; nothing says "running" before it.
    confirm_at = peer.order.index("toolConfirm")
    before = peer.order[:confirm_at]
    assert "tool_start" in before and "tool_output" not in before and "tool_end" not in before
    start = peer.of_type("tool_start")[0]
    assert start["awaitingConfirmation"] is True
    statuses_before = [m["text"] for m in peer.stream[: len(before)] if m["type"] == "status"]
    assert not any("Running" in text for text in statuses_before)
    [confirm] = peer.confirms
    assert confirm["toolCallId"] == start["toolCallId"] == result["toolCalls"][0]["id"]
    assert confirm["sessionId"] == result["sessionId"]
    assert confirm["turnId"] == result["turnId"]
    assert confirm["name"] == "terminal"
    assert confirm["arguments"] == {"command": "touch made.txt && echo made"}
    assert confirm["reason"] == "code_execution"
    assert set(confirm["sandbox"]) == {"level", "network"}
    assert len(confirm["approvalId"]) >= 22  # >= 128 bits, urlsafe base64
    end = peer.of_type("tool_end")[0]
    assert end["status"] == "completed" and "made" in end["result"]


async def test_denied_command_does_not_run_and_the_model_hears_why(
    start_server: StartServer,
) -> None:
    async def deny(_params: dict[str, Any]) -> Any:
        return {"decision": "deny", "message": "not in my repo"}

    peer = await start_server([f"Creating it. {TOUCH}", "OK, I won't."], answer=deny)
    result = await peer.chat()

    assert not (peer.workspace / "made.txt").exists()
    assert result["toolCalls"][0]["status"] == "denied"
    assert result["toolCalls"][0]["exitCode"] is None
    end = peer.of_type("tool_end")[0]
    assert end["status"] == "denied"
    assert end["result"].startswith("The user denied this tool call.")
    assert "not in my repo" in end["result"]
    assert peer.of_type("tool_output") == []
    assert result["stopReason"] == "end_turn"  # the model got the denial and answered


async def test_allow_for_session_covers_its_rule_in_that_session_only(
    start_server: StartServer,
) -> None:
    # `echo one` proposes `echo one *`: the grant covers that rule, not the terminal tool.
    turns = [
        tool_call("terminal", command="echo one >> log.txt"),
        "first done",
        tool_call("terminal", command="echo one two >> log.txt"),
        tool_call("python", code="open('py.txt', 'w').write('x')"),
        "second done",
        tool_call("terminal", command="echo one three >> log.txt"),
        "third done",
    ]
    answers = iter(["allow_session", "allow", "allow"])

    async def answer(_params: dict[str, Any]) -> Any:
        return {"decision": next(answers)}

    peer = await start_server(turns, answer=answer)
    first = await peer.chat("one")
    second = await peer.chat("two", sessionId=first["sessionId"])
    assert [c["name"] for c in peer.confirms] == ["terminal", "python"]
    other = await peer.chat("three")  # a new session asks again

    assert [c["name"] for c in peer.confirms] == ["terminal", "python", "terminal"]
    assert other["sessionId"] != first["sessionId"]
    assert (peer.workspace / "log.txt").read_text().splitlines() == [
        "one",
        "one two",
        "one three",
    ]
    assert [c["status"] for c in second["toolCalls"]] == ["completed", "completed"]
    second_starts = [m for m in peer.of_type("tool_start") if m["turnId"] == second["turnId"]]
    assert [m["awaitingConfirmation"] for m in second_starts] == [False, True]


async def test_unanswered_prompt_times_out_and_is_withdrawn(start_server: StartServer) -> None:
    peer = await start_server(
        [TOUCH, "no answer came"],
        answer=never_answer,
        init_options={"confirmTimeoutSeconds": 1},
    )
    result = await peer.chat()

    assert result["toolCalls"][0]["status"] == "timed_out"
    assert not (peer.workspace / "made.txt").exists()
    end = peer.of_type("tool_end")[0]
    assert end["status"] == "timed_out" and "no approval arrived within 1 seconds" in end["result"]
    await peer.wait_for(lambda: len(peer.withdrawn) == 1)


async def test_late_allow_after_a_timeout_is_ignored_and_runs_nothing(
    start_server: StartServer,
) -> None:
    peer = await start_server(
        [TOUCH, "no answer came"],
        answer=never_answer,
        init_options={"confirmTimeoutSeconds": 1},
    )
    result = await peer.chat()
    peer.client.protocol._send_response(peer.confirm_ids[0], result={"decision": "allow"})

    status = await peer.request("agent/status", {})
    assert status["sessions"][0]["running"] is False
    assert result["toolCalls"][0]["status"] == "timed_out"
    assert not (peer.workspace / "made.txt").exists()
    assert peer.client.messages == []  # no "Error in server" popup


async def test_error_or_malformed_answers_fail_closed(start_server: StartServer) -> None:
    replies: list[Any] = ["raise", {"decision": "yes"}, {}, ["allow"], {"decision": None}]
    turns = [TOUCH for _ in replies] + ["gave up"]

    async def answer(_params: dict[str, Any]) -> Any:
        reply = replies[len(peer.confirms) - 1]
        if reply == "raise":
            raise RuntimeError("the approval UI crashed")
        return reply

    peer = await start_server(turns, answer=answer)
    result = await peer.chat()

    assert [c["status"] for c in result["toolCalls"]] == ["denied"] * len(replies)
    assert not (peer.workspace / "made.txt").exists()
    texts = [m["result"] for m in peer.of_type("tool_end")]
    assert "error" in texts[0]
    assert all("malformed" in text for text in texts[1:])
    assert all(text.startswith("The tool call was not run") for text in texts)


async def test_bypass_runs_without_asking_but_still_strips_secrets(
    start_server: StartServer,
) -> None:
    secret = "sk-live-0123456789abcdefghijklmnop"
    peer = await start_server(
        [tool_call("terminal", command="env; touch made.txt"), "done"],
        extra_env={"GATEHOUSE_E2E_API_KEY": secret, "HARMLESS_LOOKING": secret},
    )
    result = await peer.chat(bypassPermissions=True)

    assert peer.confirms == []
    assert (peer.workspace / "made.txt").exists()
    output = peer.of_type("tool_end")[0]["result"]
    assert "PATH=" in output
    assert secret not in output
    assert "GATEHOUSE_E2E_API_KEY" not in output
    assert result["toolCalls"][0]["status"] == "completed"
    assert peer.of_type("tool_start")[0]["awaitingConfirmation"] is False


async def test_read_only_tools_run_without_a_prompt_unless_all_tools_are_confirmed(
    start_server: StartServer,
) -> None:
    (Path(__file__).parent).exists()
    turns = [tool_call("list_files"), "listed", tool_call("list_files"), "listed again"]
    peer = await start_server(turns)
    (peer.workspace / "a.txt").write_text("a")
    await peer.chat()
    assert peer.confirms == []
    await peer.chat(confirmToolCalls=True)
    assert [(c["name"], c["reason"]) for c in peer.confirms] == [("list_files", "all_tools")]


async def test_editor_without_plugin_is_asked_with_show_message_request(
    start_server: StartServer,
) -> None:
    titles: list[list[str]] = []
    choices = iter(["Allow once", "Deny", None])

    async def pick(params: dict[str, Any]) -> Any:
        titles.append([a.title for a in params["actions"]])
        choice = next(choices)
        return None if choice is None else lsp.MessageActionItem(title=choice)

    turns = [
        tool_call("terminal", command="echo allowed >> log.txt"),
        tool_call("terminal", command="echo denied >> log.txt"),
        tool_call("terminal", command="echo dismissed >> log.txt"),
        "done",
    ]
    peer = await start_server(turns, capabilities=MESSAGE_REQUEST_CAPS, answer=pick)
    result = await peer.chat()

    assert (peer.workspace / "log.txt").read_text().split() == ["allowed"]
    assert [c["status"] for c in result["toolCalls"]] == ["completed", "denied", "denied"]
    assert titles[0] == [  # Deny first: a default pick never approves
        "Deny",
        "Allow once",
        "Allow `echo allowed *` in this session",
        "Always allow `echo allowed *` in this workspace",
    ]
    message = peer.message_requests[0].message
    assert "terminal" in message and "echo allowed >> log.txt" in message
    assert "isolation:" in message and "network:" in message
    assert peer.confirms == []


async def test_cancel_while_the_prompt_is_open_withdraws_it_and_a_late_allow_runs_nothing(
    start_server: StartServer,
) -> None:
    peer = await start_server([TOUCH, "never reached"], answer=never_answer)
    pending = peer.send_chat()
    await peer.wait_for(lambda: len(peer.confirms) == 1)
    session_id = peer.confirms[0]["sessionId"]

    cancelled = await peer.request("agent/cancel", {"sessionId": session_id})
    result = await pending
    peer.client.protocol._send_response(peer.confirm_ids[0], result={"decision": "allow"})
    await asyncio.sleep(0.3)

    assert cancelled == {"cancelled": True}
    assert result["stopReason"] == "cancelled"
    assert result["toolCalls"][0]["status"] == "cancelled"
    await peer.wait_for(lambda: len(peer.withdrawn) == 1)
    assert not (peer.workspace / "made.txt").exists()
    assert peer.client.messages == []
    # The session is usable again and the late answer changed nothing.
    again = await peer.chat("again", sessionId=session_id)
    assert again["stopReason"] == "end_turn"
    assert not (peer.workspace / "made.txt").exists()
