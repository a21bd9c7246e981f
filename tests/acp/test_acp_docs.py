"""docs/editors.md's Zed and JetBrains configurations, verbatim, started by the ACP SDK's client
as those IDEs start an agent (``command`` + ``args`` + ``env``): the answer streams, the
permission request's first option (what a pre-selected default or Enter picks) denies and
nothing runs, Allow once runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from acp import PROTOCOL_VERSION, spawn_agent_process, text_block
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    Implementation,
    PermissionOption,
    RequestPermissionResponse,
    ToolCallUpdate,
)

from tests.acp.conftest import Recorder, pick, tool_call
from tests.editors import docs_block, docs_home, home_env

TOUCH = "Let me check. " + tool_call("terminal", command="echo ran > made.txt")
SLOW = {"text": "There are no Python files here yet.", "chunkDelayMs": 50}


async def first_option(_call: ToolCallUpdate, options: list[PermissionOption]) -> Any:
    return RequestPermissionResponse(
        outcome=AllowedOutcome(outcome="selected", option_id=options[0].option_id)
    )


@pytest.mark.parametrize("section", ["Zed", "JetBrains IDEs"])
async def test_the_documented_agent_server_streams_defaults_to_deny_and_allow_runs(
    tmp_path: Path, section: str
) -> None:
    home = docs_home(tmp_path, [TOUCH, SLOW, TOUCH, SLOW])
    config = json.loads(docs_block(section, "json").replace("/home/you", str(home)))
    server = config["agent_servers"]["Gatehouse"]
    client = Recorder(first_option)
    workspace = home / "project"
    env = home_env(home) | server["env"]
    async with spawn_agent_process(client, server["command"], *server["args"], env=env) as (
        conn,
        _process,
    ):
        hello = await conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(),
            client_info=Implementation(name=section, version="0"),
        )
        assert hello.agent_info is not None and hello.agent_info.name == "gatehouse"
        assert hello.agent_capabilities is not None
        assert hello.agent_capabilities.load_session is True  # sessions are saved (memory.md)
        session = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        denied = await conn.prompt(session_id=session, prompt=[text_block("count the lines")])

        assert denied.stop_reason == "end_turn"
        _call, options = client.permissions[0]
        assert (options[0].option_id, options[0].kind) == ("deny", "reject_once")
        assert not (workspace / "made.txt").exists()
        assert client.of("tool_call_update")[-1].raw_output["status"] == "denied"
        assert client.text() == "Let me check. There are no Python files here yet."
        assert len(client.of("agent_message_chunk")) >= 3  # it streamed

        client.decide = pick("allow_once")
        allowed = await conn.prompt(session_id=session, prompt=[text_block("again")])

        assert allowed.stop_reason == "end_turn"
        assert (workspace / "made.txt").read_text() == "ran\n"
        assert client.of("tool_call_update")[-1].status == "completed"
