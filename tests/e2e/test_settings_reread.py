"""workspace/didChangeConfiguration: settings are re-read and apply from the next request
(eglot always sends it; VS Code-style clients send it when a setting changes)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp

from tests.e2e.conftest import Peer, StartServer, tool_call


def change(peer: Peer, settings: Any) -> None:
    peer.client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(settings))


async def test_new_settings_apply_from_the_next_request(start_server: StartServer) -> None:
    touch = tool_call("terminal", command="touch made.txt")
    peer = await start_server([touch, "asked first", touch, "ran without asking"])
    await peer.chat()
    assert len(peer.confirms) == 1

    change(peer, {"gatehouse": {"confirmCodeExecution": False}})
    result = await peer.chat()

    assert len(peer.confirms) == 1  # not asked again
    assert result["toolCalls"][0]["status"] == "completed"
    assert (peer.workspace / "made.txt").exists()


async def test_a_changed_model_setting_makes_the_model_again(
    start_server: StartServer, tmp_path: Path
) -> None:
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    first.write_text(json.dumps({"turns": ["from the first script"] * 3}))
    second.write_text(json.dumps({"turns": ["from the second script"]}))
    peer = await start_server(
        server_args=["--backend", "scripted"], init_options={"script": str(first)}
    )
    assert (await peer.chat())["text"] == "from the first script"

    change(peer, {"gatehouse": {"script": str(second)}})
    assert (await peer.chat())["text"] == "from the second script"


async def test_sandbox_settings_are_reported_not_applied_and_others_servers_ignored(
    start_server: StartServer,
) -> None:
    peer = await start_server(["hello"])
    change(peer, {"pyright": {"typeCheckingMode": "strict"}})  # not ours: nothing said
    change(peer, {"gatehouse": {"sandbox": {"network": True}}})
    status = await peer.request("agent/status", {})

    assert status["sandbox"]["network"] is False
    texts = [m.message for m in peer.client.messages]
    assert texts == [
        "Gatehouse settings: sandbox settings apply when the server starts; restart it to "
        "change them"
    ]
