"""Malformed input on the wire: always a JSON-RPC error naming the problem, never silence, never
a crash, never a traceback, never a popup."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest_asyncio

from harness.connection import ErrorResponse, RpcClient


class Wire:
    def __init__(self, client: RpcClient) -> None:
        self.client = client
        self.seen: list[dict[str, Any]] = []
        client.on_message(self.seen.append)

    def raw(self, body: bytes) -> None:
        self.client.send_raw(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    async def response_for(self, msg_id: Any, seconds: float = 10) -> dict[str, Any]:
        async with asyncio.timeout(seconds):
            while True:
                for message in self.seen:
                    if message.get("id") == msg_id and ("result" in message or "error" in message):
                        return message
                await asyncio.sleep(0.01)

    def popups(self) -> list[dict[str, Any]]:
        return [m for m in self.seen if m.get("method") == "window/showMessage"]


@pytest_asyncio.fixture
async def wire(tmp_path: Path) -> AsyncIterator[Wire]:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": ["still alive"]}))
    client = RpcClient()
    await client.start(
        [
            sys.executable,
            "-m",
            "server",
            "--backend",
            "scripted",
            "--script",
            str(script),
            "--workspace",
            str(tmp_path),
        ]
    )
    wire = Wire(client)
    await client.request("initialize", {"capabilities": {}})
    client.notify("initialized", {})
    yield wire
    await client.close()


async def test_broken_json_gets_parse_error_and_the_server_keeps_serving(wire: Wire) -> None:
    wire.raw(b'{"jsonrpc": "2.0", "id": 1, "method": ')
    reply = await wire.response_for(None)
    assert reply["error"]["code"] == -32700
    assert "Traceback" not in json.dumps(reply)
    status = await wire.client.request("agent/status", {})
    assert status["backend"] == "scripted"
    assert wire.popups() == []


async def test_valid_json_that_is_not_json_rpc_gets_invalid_request(wire: Wire) -> None:
    wire.raw(b'{"id": 41, "method": "agent/status"}')  # no "jsonrpc"
    assert (await wire.response_for(41))["error"]["code"] == -32600
    wire.raw(b"[1, 2, 3]")  # a batch: not supported
    assert (await wire.response_for(None))["error"]["code"] == -32600
    wire.raw(b'"just a string"')
    await wire.client.request("agent/status", {})
    assert wire.popups() == []


async def test_known_lsp_method_with_malformed_params_gets_an_answer(wire: Wire) -> None:
    wire.raw(b'{"jsonrpc": "2.0", "id": 42, "method": "textDocument/hover", "params": 7}')
    reply = await wire.response_for(42)
    assert reply["error"]["code"] in (-32602, -32601)
    wire.raw(b'{"jsonrpc": "2.0", "id": 43, "method": "agent/chat"}')  # no params at all
    reply = await wire.response_for(43)
    assert reply["error"]["code"] == -32602 and "prompt" in reply["error"]["message"]


async def test_non_utf8_body_and_garbage_headers_do_not_kill_the_server(wire: Wire) -> None:
    wire.raw(b'{"jsonrpc": "2.0", "id": 44, "method": "agent/status", "x": "\xff\xfe"}')
    wire.client.send_raw(b"Garbage-Header: yes\r\n\r\n")
    result = await wire.client.request("agent/chat", {"prompt": "hi?", "enableTools": False})
    assert result["text"] == "still alive"


async def test_requests_after_shutdown_are_refused_not_ignored(wire: Wire) -> None:
    await wire.client.request("shutdown", None)
    try:
        await asyncio.wait_for(wire.client.request("agent/status", {}), 10)
    except ErrorResponse as exc:
        assert exc.code == -32600 and "shutting down" in exc.message
    else:
        raise AssertionError("a request after shutdown must get an error")


async def test_document_notifications_out_of_order_or_malformed_change_nothing(wire: Wire) -> None:
    """The server tracks open documents (for the edit tools); an editor that sends them wrong
    gets no popup and no crash."""
    uri = "file:///nowhere/never-opened.py"
    change = {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": "x"}]}
    wire.client.notify("textDocument/didChange", change)
    wire.client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    wire.client.notify("textDocument/didOpen", {"textDocument": {"uri": 7}})
    wire.client.notify("textDocument/didSave", {})
    bad_range = {"range": {"start": {"line": 99, "character": 0}}, "text": "y"}
    wire.client.notify(
        "textDocument/didChange",
        {"textDocument": {"uri": uri, "version": 3}, "contentChanges": [bad_range]},
    )
    status = await wire.client.request("agent/status", {})
    assert status["backend"] == "scripted"
    assert wire.popups() == []
