"""agent/chat, agent/cancel and agent/status as an editor sees them over real stdio."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from lsprotocol import types as lsp

from tests.e2e.conftest import (
    NO_PROMPT_CAPS,
    StartServer,
    expect_error,
    never_answer,
    process_running,
    tool_call,
)

FIRST_TURN = "The first scripted answer."


async def test_initialize_advertises_gatehouse_tools_and_sandbox(start_server: StartServer) -> None:
    peer = await start_server()
    gatehouse = peer.init_result.capabilities.experimental["gatehouse"]
    assert gatehouse["tools"] == [
        *("python", "terminal", "read_file", "list_files", "search_files"),
        *("edit_file", "write_file", "apply_patch"),
    ]
    # Like any language server, it asks the editor for its open documents (incremental sync).
    sync = peer.init_result.capabilities.text_document_sync
    assert sync.open_close is True and sync.change == 2 and sync.save
    assert gatehouse["sandbox"]["level"] in ("strong", "standard", "limits-only", "none")
    assert isinstance(gatehouse["sandbox"]["network"], bool)
    assert gatehouse["version"]


async def test_streamed_deltas_concatenate_to_the_result_text_without_markup(
    start_server: StartServer,
) -> None:
    turns = [
        "Let me check the <tool_call> usage in a < b and x<tool. "
        + tool_call("list_files")
        + " after the call.",
        "Ünïcödé ✓ and a long answer " + "word " * 300,
    ]
    peer = await start_server(turns)
    result = await peer.chat()

    assert len(peer.of_type("content")) >= 2
    assert peer.content() == result["text"]
    assert "list_files" not in result["text"] and "</tool_call>" not in result["text"]
    assert result["text"].endswith("word " * 300)
    assert "Ünïcödé ✓" in result["text"]
    assert {(m["sessionId"], m["turnId"]) for m in peer.stream} == {
        (result["sessionId"], result["turnId"])
    }


@pytest.mark.parametrize(
    ("overrides", "flag"),
    [
        ({}, "confirmCodeExecution"),
        ({"confirmToolCalls": True}, "confirmToolCalls"),
        ({"confirmToolCalls": True, "enabledTools": ["read_file"]}, "confirmToolCalls"),
        ({"enabledTools": ["python"]}, "confirmCodeExecution"),
        ({"confirmCodeExecution": False}, "confirmFileEdits"),
        ({"enabledTools": ["read_file", "apply_patch"]}, "confirmFileEdits"),
    ],
)
async def test_a_gate_the_client_cannot_show_is_refused_before_the_model_runs(
    start_server: StartServer, overrides: dict[str, Any], flag: str
) -> None:
    peer = await start_server([FIRST_TURN], capabilities=NO_PROMPT_CAPS)
    error = await expect_error(peer.chat(**overrides))

    assert error.code == -32600
    assert error.data == {"param": flag}
    assert flag in str(error)
    assert peer.stream == []
    # The model was not run: its first turn is still there for the next request.
    result = await peer.chat(enableTools=False)
    assert result["text"] == FIRST_TURN


@pytest.mark.parametrize(
    "overrides",
    [
        {"bypassPermissions": True},
        {"enableTools": False},
        {"maxToolCalls": 0},
        {"enabledTools": ["read_file", "list_files", "search_files"]},
        {"enabledTools": []},
        {"confirmCodeExecution": False, "confirmFileEdits": False},
        {"enabledTools": ["read_file", "edit_file"], "confirmFileEdits": False},
    ],
)
async def test_requests_that_could_never_prompt_are_served_without_a_prompt_capability(
    start_server: StartServer, overrides: dict[str, Any]
) -> None:
    peer = await start_server([FIRST_TURN], capabilities=NO_PROMPT_CAPS)
    result = await peer.chat(**overrides)
    assert result["stopReason"] == "end_turn"
    assert result["text"] == FIRST_TURN


async def test_invalid_init_options_are_reported_and_replaced_by_defaults(
    start_server: StartServer,
) -> None:
    peer = await start_server(
        [tool_call("terminal", command="touch made.txt"), "done"],
        init_options={"confirmCodeExecution": "yes", "confirmTimeoutSeconds": -5, "colour": 1},
    )
    result = await peer.chat()
    await peer.wait_for(lambda: len(peer.client.messages) >= 3)

    text = " ".join(m.message for m in peer.client.messages)
    assert "confirmCodeExecution" in text and "confirmTimeoutSeconds" in text and "colour" in text
    # The default (ask before code runs) stayed in force.
    assert len(peer.confirms) == 1 and result["toolCalls"][0]["status"] == "completed"


@pytest.mark.parametrize(
    ("params", "fields"),
    [
        ({}, ["prompt"]),
        ({"prompt": "   "}, ["prompt"]),
        ({"prompt": 7, "maxToolCalls": -1}, ["prompt", "maxToolCalls"]),
        ({"prompt": "hi", "enableTools": "yes"}, ["enableTools"]),
        ({"prompt": "hi", "bypassPermission": True}, ["bypassPermission"]),
        ({"prompt": "hi", "enabledTools": ["terminal", "rm_rf"]}, ["enabledTools"]),
        ({"prompt": "hi", "sessionId": "s_nope"}, ["sessionId"]),
        ({"prompt": "hi", "temperature": "hot"}, ["temperature"]),
    ],
)
async def test_bad_chat_params_get_an_error_naming_each_field(
    start_server: StartServer, params: dict[str, Any], fields: list[str]
) -> None:
    peer = await start_server([FIRST_TURN])
    error = await expect_error(peer.request("agent/chat", params))
    assert error.code == -32602
    for name in fields:
        assert name in str(error)
    # Nothing was lost: the server still serves, and the model did not run.
    assert (await peer.chat())["text"] == FIRST_TURN


async def test_unknown_method_and_bad_params_leave_the_server_running(
    start_server: StartServer,
) -> None:
    peer = await start_server([FIRST_TURN])
    assert (await expect_error(peer.request("agent/explode", {}))).code == -32601
    assert (await expect_error(peer.request("agent/cancel", {}))).code == -32602
    assert (await expect_error(peer.request("agent/cancel", {"sessionId": "nope"}))).code == -32602
    assert (await expect_error(peer.request("agent/status", [1, 2]))).code == -32602
    assert (await peer.chat())["text"] == FIRST_TURN
    assert peer.client.messages == []


async def test_second_chat_on_a_running_session_is_refused_clearly(
    start_server: StartServer,
) -> None:
    peer = await start_server(
        [tool_call("terminal", command="touch x"), "done"], answer=never_answer
    )
    first = peer.send_chat()
    await peer.wait_for(lambda: len(peer.confirms) == 1)
    session_id = peer.confirms[0]["sessionId"]

    error = await expect_error(peer.chat("again", sessionId=session_id))
    assert error.code == -32600
    assert "still running" in str(error)
    await peer.request("agent/cancel", {"sessionId": session_id})
    assert (await first)["stopReason"] == "cancelled"


async def test_cancel_kills_a_running_command_and_its_children(start_server: StartServer) -> None:
    marker = "gatehouse_e2e_sleep_marker"
    command = f"sh -c 'exec -a {marker} sleep 300' & sleep 300; touch late.txt"
    peer = await start_server([tool_call("terminal", command=command), "never"])
    pending = peer.send_chat()
    await peer.wait_for(lambda: process_running(marker))
    session_id = peer.confirms[0]["sessionId"]

    assert await peer.request("agent/cancel", {"sessionId": session_id}) == {"cancelled": True}
    result = await asyncio.wait_for(pending, 15)

    assert result["stopReason"] == "cancelled"
    assert result["toolCalls"][0]["status"] == "cancelled"
    await peer.wait_for(lambda: not process_running(marker))
    assert not (peer.workspace / "late.txt").exists()
    assert await peer.request("agent/cancel", {"sessionId": session_id}) == {"cancelled": False}


async def test_cancel_request_for_the_chat_itself_ends_it_with_32800_and_cleans_up(
    start_server: StartServer,
) -> None:
    peer = await start_server(
        [tool_call("terminal", command="touch made.txt"), "never"], answer=never_answer
    )
    future = peer.client.protocol.send_request("agent/chat", {"prompt": "go"})
    await peer.wait_for(lambda: len(peer.confirms) == 1)
    request_id = next(
        key for key, fut in peer.client.protocol._request_futures.items() if fut is future
    )
    peer.client.protocol.notify(lsp.CANCEL_REQUEST, lsp.CancelParams(id=request_id))

    error = await expect_error(asyncio.wrap_future(future))
    assert error.code == -32800
    await peer.wait_for(lambda: len(peer.withdrawn) == 1)
    status = await peer.request("agent/status", {})
    assert [s["running"] for s in status["sessions"]] == [False]
    assert not (peer.workspace / "made.txt").exists()


async def test_model_cancelled_mid_stream_returns_what_it_said_so_far(
    start_server: StartServer,
) -> None:
    peer = await start_server([{"text": "word " * 400, "chunkDelayMs": 20}])
    pending = peer.send_chat()
    await peer.wait_for(lambda: len(peer.of_type("content")) >= 2)
    session_id = peer.stream[0]["sessionId"]
    await peer.request("agent/cancel", {"sessionId": session_id})
    result = await asyncio.wait_for(pending, 10)

    assert result["stopReason"] == "cancelled"
    assert 0 < len(result["text"]) < len("word " * 400)
    await asyncio.sleep(0.2)
    assert peer.content() == result["text"]


async def test_status_lists_backend_sandbox_and_sessions(start_server: StartServer) -> None:
    peer = await start_server([FIRST_TURN])
    result = await peer.chat()
    status = await peer.request("agent/status", None)
    assert status["backend"] == "scripted"
    assert status["sandbox"]["level"]
    assert status["sessions"] == [
        {"sessionId": result["sessionId"], "turns": 1, "running": False, "allowedTools": []}
    ]
    assert json.loads(json.dumps(status)) == status


async def test_limits_stop_the_turn_with_the_right_reason(start_server: StartServer) -> None:
    turns = [
        tool_call("list_files") + tool_call("list_files", path="."),
        "unreached",
        "a long answer that will be cut",
    ]
    peer = await start_server(turns)
    limited = await peer.chat(maxToolCalls=1)
    assert limited["stopReason"] == "tool_limit"
    assert [c["name"] for c in limited["toolCalls"]] == ["list_files"]
    assert any("limit" in m["text"] for m in peer.of_type("status"))
    skipped = await peer.chat()  # consumes "unreached"
    assert skipped["stopReason"] == "end_turn"
    cut = await peer.chat(maxTokens=3)
    assert cut["stopReason"] == "max_tokens"
    assert cut["text"] == "a long answer"
