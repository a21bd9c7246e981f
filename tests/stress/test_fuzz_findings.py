"""Regression tests for what fuzzing the real server found (issue 16), each over real stdio with
raw frames: the server answers or drops what it cannot read, keeps serving, and never runs a
request it could not answer."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.toolcalls import deepseek as ds
from tests.stress.wire import NO_ANSWER, WireServer, encode, frame, hermes_call, start_server

TOUCH = hermes_call("terminal", command="touch ran.txt")


@pytest.fixture(scope="module")
def wire(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WireServer]:
    server = start_server(tmp_path_factory.mktemp("findings"), ["still alive"] * 50)
    yield server
    server.close()


def _error(response: dict[str, Any]) -> dict[str, Any]:
    assert "error" in response, response
    assert "Traceback" not in json.dumps(response)
    error: dict[str, Any] = response["error"]
    assert "traceback" not in json.dumps(error.get("data") or {})
    return error


def _null_errors(wire: WireServer) -> list[dict[str, Any]]:
    return [e for e in wire.responses_for(None) if "error" in e]


def _next_null_error(wire: WireServer, before: int) -> dict[str, Any]:
    wire.wait_until(lambda: len(_null_errors(wire)) > before)
    return _null_errors(wire)[before]


def test_an_enormous_content_length_is_refused_and_the_server_keeps_serving(
    wire: WireServer,
) -> None:
    for length in (b"1000000000000", b"9223372036854775808", b"9" * 80):
        before = len(_null_errors(wire))
        wire.send_raw(b"Content-Length: " + length + b"\r\n\r\n" + b'{"jsonrpc": "2.0"}')
        error = _null_errors_after(wire, before)
        assert error["code"] == -32600 and "limit" in error["message"]
        assert wire.ping(30) >= 0
    assert wire.alive()


def _null_errors_after(wire: WireServer, before: int) -> dict[str, Any]:
    return _error(_next_null_error(wire, before))


def test_deep_nesting_and_huge_integers_get_an_answer(wire: WireServer) -> None:
    deep = b'{"jsonrpc": "2.0", "id": "deep", "method": "agent/status", "params": {"x": ' + (
        b"[" * 5000 + b"]" * 5000 + b"}}"
    )
    before = len(_null_errors(wire))
    wire.send_raw(frame(deep))
    assert _null_errors_after(wire, before)["code"] == -32700
    # Deep enough to hurt later, shallow enough to read: refused with its id.
    nested = {"x": json.loads("[" * 300 + "]" * 300)}
    wire.send({"jsonrpc": "2.0", "id": "nested", "method": "agent/status", "params": nested})
    assert _error(wire.response_for("nested"))["code"] == -32600
    huge = b'{"jsonrpc": "2.0", "id": 7, "method": "agent/status", "n": ' + b"9" * 4400 + b"}"
    before = len(_null_errors(wire))
    wire.send_raw(frame(huge))
    assert _null_errors_after(wire, before)["code"] == -32700
    before = len(_null_errors(wire))
    wire.send_raw(frame(b'{"jsonrpc": "2.0", "id": 8, "method": "agent/status", "n": NaN}'))
    assert _null_errors_after(wire, before)["code"] == -32700
    assert wire.ping(30) >= 0


@pytest.mark.parametrize("version", ["1.0", "", None, 2.0])
def test_a_request_that_is_not_json_rpc_2_is_answered_with_its_id(
    wire: WireServer, version: Any
) -> None:
    msg_id = f"v-{version!r}"
    wire.send({"jsonrpc": version, "id": msg_id, "method": "agent/status", "params": {}})
    assert _error(wire.response_for(msg_id))["code"] == -32600


@pytest.mark.parametrize(
    "method", ["initialized", "$/cancelRequest", "$/setTrace", "textDocument/didOpen", "exit"]
)
def test_a_notification_method_sent_with_an_id_is_answered(wire: WireServer, method: str) -> None:
    msg_id = f"n-{method}"
    params = {"id": 999} if method == "$/cancelRequest" else {}
    wire.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
    error = _error(wire.response_for(msg_id))
    assert error["code"] == -32600 and "notification" in error["message"]
    assert wire.alive()


@pytest.mark.parametrize("bad_id", [[1], {"x": 1}, 1.5, True, None])
def test_a_request_whose_id_is_not_a_string_or_integer_gets_invalid_request(
    wire: WireServer, bad_id: Any
) -> None:
    before = len(_null_errors(wire))
    wire.send({"jsonrpc": "2.0", "id": bad_id, "method": "agent/status", "params": {}})
    assert _null_errors_after(wire, before)["code"] == -32600


@pytest.mark.parametrize("method", [123, None, True, ["agent/status"]])
def test_a_method_that_is_not_a_string_gets_invalid_request_without_a_traceback(
    wire: WireServer, method: Any
) -> None:
    msg_id = f"m-{method!r}"
    wire.send({"jsonrpc": "2.0", "id": msg_id, "method": method})
    assert _error(wire.response_for(msg_id))["code"] == -32600


def test_an_unknown_execute_command_is_invalid_params(wire: WireServer) -> None:
    params = {"command": "gatehouse.nothing", "arguments": []}
    response = wire.request("workspace/executeCommand", params)
    error = _error(response)
    assert error["code"] == -32602 and "gatehouse.nothing" in error["message"]


def test_frames_split_into_single_bytes_and_garbage_between_frames_are_read(
    wire: WireServer,
) -> None:
    data = encode({"jsonrpc": "2.0", "id": "bytes", "method": "agent/status", "params": {}})
    wire.send_in_pieces(data, 1)
    assert "result" in wire.response_for("bytes")
    # A body shorter than its Content-Length claims is followed by garbage and a good frame.
    wire.send_raw(b"garbage without a newline" + encode({"jsonrpc": "2.0", "id": "after"}))
    wire.send({"jsonrpc": "2.0", "id": "after-garbage", "method": "agent/status", "params": {}})
    assert "result" in wire.response_for("after-garbage")


def test_a_request_method_sent_as_a_notification_runs_nothing(tmp_path: Path) -> None:
    server = start_server(tmp_path, [TOUCH, "done"], answer=lambda _p: {"decision": "allow"})
    try:
        server.send({"jsonrpc": "2.0", "method": "agent/chat", "params": {"prompt": "go"}})
        server.ping(30)
        assert server.result("agent/status", {})["sessions"] == []
        assert not (server.workspace / "ran.txt").exists()
    finally:
        server.close()


def test_a_chat_with_an_object_id_is_refused_and_its_turn_never_runs(tmp_path: Path) -> None:
    server = start_server(tmp_path, [TOUCH, "done"], answer=lambda _p: {"decision": "allow"})
    try:
        server.send({"jsonrpc": "2.0", "id": {"x": 1}, "method": "agent/chat", "params": {}})
        server.send(
            {"jsonrpc": "2.0", "id": [2], "method": "agent/chat", "params": {"prompt": "go"}}
        )
        server.wait_until(lambda: len(_null_errors(server)) == 2)
        assert all(e["error"]["code"] == -32600 for e in _null_errors(server))
        server.ping(30)
        assert server.approvals == []
        assert server.stream() == []
        assert server.result("agent/status", {})["sessions"] == []
        assert not (server.workspace / "ran.txt").exists()
    finally:
        server.close()


def test_a_chat_whose_id_is_the_id_of_a_pending_approval_is_still_answered(
    tmp_path: Path,
) -> None:
    """Client and server request ids live in separate tables: a client may reuse the id of our
    pending toolConfirm for its own request, and withdrawing the approval leaves it alone."""
    server = start_server(tmp_path, [TOUCH, "first done", "second answer"], answer=_never)
    try:
        server.send(
            {"jsonrpc": "2.0", "id": "c1", "method": "agent/chat", "params": {"prompt": "go"}}
        )
        server.wait_until(lambda: len(server.approvals) == 1)
        approval_id = server.approvals[0].msg_id
        session = server.stream()[0]["sessionId"]
        server.send(
            {
                "jsonrpc": "2.0",
                "id": approval_id,
                "method": "agent/chat",
                "params": {"prompt": "again"},
            }
        )
        server.wait_until(lambda: any(s["sessionId"] != session for s in server.stream()))
        assert server.result("agent/cancel", {"sessionId": session})["cancelled"] is True
        first = server.response_for("c1")
        assert first["result"]["stopReason"] == "cancelled"
        second = server.response_for(approval_id)
        assert "result" in second, second  # not the -32800 of the withdrawn approval
        assert len(server.responses_for(approval_id)) == 1
        assert not (server.workspace / "ran.txt").exists()
    finally:
        server.close()


def _never(_params: dict[str, Any]) -> Any:
    return NO_ANSWER


MODEL_PATHOLOGIES = [
    # A 4,400-digit number in arguments, in three families' markup.
    '<tool_call>{"name": "terminal", "arguments": {"command": "ls", "n": ' + "9" * 4400 + "}}"
    "</tool_call>",
    '[TOOL_CALLS]terminal[ARGS]{"command": "ls", "n": ' + "9" * 4400 + "}",
    f"{ds.CALLS_BEGIN}{ds.CALL_BEGIN}function{ds.SEP}terminal\n```json\n"
    '{"command": "ls", "n": ' + "9" * 4400 + f"}}\n```{ds.CALL_END}{ds.CALLS_END}",
    # Arguments nested 950 deep.
    '<tool_call>{"name": "terminal", "arguments": {"command": "ls", "x": '
    + "[" * 950
    + "]" * 950
    + "}}</tool_call>",
    # A Gemma tool_code call that is a recursion bomb for Python's parser.
    "```tool_code\nterminal(n=" + "-" * 5000 + "1)\n```",
    # Infinity is not JSON.
    '<tool_call>{"name": "terminal", "arguments": {"command": "ls", "n": Infinity}}</tool_call>',
    # A NUL byte in a command.
    hermes_call("terminal", command="touch ran.txt\x00"),
]


def test_pathological_model_output_is_a_failed_tool_call_not_a_broken_turn(
    tmp_path: Path,
) -> None:
    turns: list[Any] = []
    for pathology in MODEL_PATHOLOGIES:
        turns += [pathology, "the model goes on"]
    server = start_server(tmp_path, turns, answer=lambda _p: {"decision": "allow"})
    try:
        for index in range(len(MODEL_PATHOLOGIES)):
            response = server.request("agent/chat", {"prompt": f"case {index}"}, 60)
            assert "result" in response, (index, response)
            result = response["result"]
            assert result["stopReason"] == "end_turn", (index, result)
            assert [c["status"] for c in result["toolCalls"]] == ["failed"], (index, result)
        assert server.unpaired_tool_calls() == set()
        assert not (server.workspace / "ran.txt").exists()
    finally:
        server.close()


def test_garbage_replies_to_requests_never_sent_are_ignored(wire: WireServer) -> None:
    wire.send({"jsonrpc": "2.0", "id": "never-sent", "result": {"decision": "allow"}})
    wire.send({"jsonrpc": "2.0", "id": 12345, "error": {"code": 1, "message": "x"}})
    wire.send({"jsonrpc": "2.0", "id": "both", "result": 1, "error": {"code": 1, "message": ""}})
    wire.send({"jsonrpc": "2.0", "id": [1], "result": None})
    started = time.monotonic()
    assert wire.ping(30) >= 0 and time.monotonic() >= started
    assert not any(m.get("method") == "window/showMessage" for m in wire.messages), (
        "no popups for garbage"
    )
