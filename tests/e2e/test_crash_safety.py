"""``kill -9`` of a real server at random points loses at most the turn in flight.

One workspace, one data folder, a chain of servers: each one first proves the previous one's
death harmed nothing (it opens every session the client had seen, the audit log verifies), then
starts a turn of a random kind (streaming; an approval that is never answered; a command that
runs; a command approved just before its checkpoint) and is killed with SIGKILL at a random
moment of it. After each kill: no process of the killed server remains (its own session, and the
commands it started, found by a marker in their command line), and nothing the user had not
approved ran (the never-approved commands left no trace, and every execution in the audit log
follows an approval of that very call). At the end ``gatehouse audit verify`` passes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from engine.memory.audit import verify
from harness.connection import ErrorResponse, RpcClient

KILLS = 52
SEED = int(os.environ.get("GATEHOUSE_CRASH_SEED", "20261201"))
SCENARIOS = ("streaming", "approval_pending", "command_running", "checkpoint")
pytestmark = [
    pytest.mark.skipif(sys.platform != "linux", reason="/proc and signals"),
    pytest.mark.timeout(1500),
]


def call(name: str, **arguments: Any) -> str:
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


@dataclass
class Run:
    """What the client saw of one server before it was killed."""

    sessions: set[str] = field(default_factory=set)
    asked: asyncio.Event = field(default_factory=asyncio.Event)
    running: asyncio.Event = field(default_factory=asyncio.Event)
    streaming: asyncio.Event = field(default_factory=asyncio.Event)


def processes_of_session(sid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if int(fields[3]) == sid and fields[0] != "Z":
            found.append(int(entry.name))
    return found


def processes_with(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if marker.encode() in (entry / "cmdline").read_bytes():
                state = (entry / "stat").read_text()
                if state[state.rfind(")") + 2] != "Z":
                    found.append(int(entry.name))
        except OSError:
            continue
    return found


async def gone(check: Any, seconds: float = 10.0) -> list[int]:
    deadline = time.monotonic() + seconds
    while (left := check()) and time.monotonic() < deadline:  # noqa: ASYNC110 - /proc has no event
        await asyncio.sleep(0.05)
    return list(left)


async def start(workspace: Path, script: Path, log: Any, run: Run) -> RpcClient:
    client = RpcClient()

    def on_stream(params: Any) -> None:
        if isinstance(params, dict):
            run.sessions.add(params["sessionId"])
            if params.get("type") == "content":
                run.streaming.set()
            if params.get("type") == "status" and params.get("text", "").startswith("Running"):
                run.running.set()

    client.on_notification("agent/stream", on_stream)
    argv = [sys.executable, "-m", "server", "serve", "--backend", "scripted", "--script",
            str(script), "--workspace", str(workspace), "--log-level", "WARNING"]  # fmt: skip
    await client.start(argv, stderr=log.fileno(), new_session=True)
    await client.request(
        "initialize",
        {
            "processId": os.getpid(),
            "rootUri": workspace.as_uri(),
            "capabilities": {"experimental": {"toolConfirm": True}},
        },
    )
    client.notify("initialized", {})
    return client


async def check_previous_runs(client: RpcClient, seen: set[str], data_dir: Path) -> None:
    """The next server opens every session the client saw, and the audit log verifies."""
    listed = {s["sessionId"] for s in (await client.request("agent/sessions", {}))["sessions"]}
    assert seen <= listed, f"sessions lost: {seen - listed}"
    for session_id in sorted(seen):
        loaded = await client.request("agent/session/load", {"sessionId": session_id})
        assert loaded["sessionId"] == session_id
    result = verify(data_dir / "audit" / "audit.jsonl")
    assert result.ok, result.problems


def check_nothing_unapproved_ran(data_dir: Path, never_approved: set[str]) -> None:
    path = data_dir / "audit" / "audit.jsonl"
    if not path.exists():
        return
    approved: set[str] = set()
    for line in path.read_text().splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue  # an unfinished last line: verify() judges it
        if record.get("type") == "approval" and record["decision"] in ("allow", "allow_session"):
            approved.add(record["toolCallId"])
        if record.get("type") == "execution":
            assert record["toolCallId"] in approved, f"ran without an approval: {record}"
            assert record["tool"] != "terminal" or "never-" not in record["arguments"]["command"]


async def test_kill_9_at_random_points_loses_at_most_the_turn_in_flight(
    tmp_path: Path, private_data_dir: Path
) -> None:
    rng = random.Random(SEED)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    for i in range(300):  # enough files for a checkpoint to take a moment
        folder = workspace / f"pkg{i % 12}"
        folder.mkdir(exist_ok=True)
        (folder / f"m{i}.py").write_text(f"value = {i}\n" * 20)
    seen: set[str] = set()
    never_approved: set[str] = set()
    log = open(tmp_path / "servers.log", "w")  # noqa: SIM115, ASYNC230 - the servers' stderr
    kinds: list[str] = []
    triggered: set[str] = set()
    """Scenarios whose moment was reached (the kill came while it was going on) at least once."""
    try:
        for i in range(KILLS):
            kind = SCENARIOS[i % len(SCENARIOS)] if i < len(SCENARIOS) else rng.choice(SCENARIOS)
            kinds.append(kind)
            marker = f"crash{SEED}x{i}"
            turns: list[Any] = []
            if kind == "streaming":
                turns = [{"text": "word " * 400, "chunkDelayMs": rng.choice([1, 5, 10])}]
            elif kind == "approval_pending":
                turns = [call("terminal", command=f"touch never-{marker}"), "never said"]
                never_approved.add(marker)
            elif kind == "command_running":
                command = f"echo {marker} > ran-{i}.txt; sleep 30 # {marker}"
                turns = [call("terminal", command=command), "never said"]
            else:
                turns = [call("terminal", command=f"echo {marker} > cp-{i}.txt"), "Done."]
            script = tmp_path / f"script{i}.json"
            script.write_text(json.dumps({"turns": turns}))
            run = Run()
            client = await start(workspace, script, log, run)
            pid = client.pid
            assert pid is not None
            await check_previous_runs(client, seen, private_data_dir)

            release = asyncio.Event()

            async def confirm(
                _params: Any, kind: str = kind, run: Run = run, release: asyncio.Event = release
            ) -> Any:
                run.asked.set()
                if kind == "approval_pending":
                    await release.wait()  # never answered: the server dies first
                return {"decision": "allow"}

            client.on_request("toolConfirm", confirm)
            if kind == "checkpoint" and i % 2:  # a changed tree makes the checkpoint work
                for j in rng.sample(range(300), 40):
                    (workspace / f"pkg{j % 12}" / f"m{j}.py").write_text(f"changed {i}\n")
            chat = asyncio.ensure_future(client.request("agent/chat", {"prompt": f"turn {i}"}))
            trigger = {
                "streaming": run.streaming,
                "approval_pending": run.asked,
                "command_running": run.running,
                "checkpoint": run.asked,
            }[kind]
            waits = [asyncio.ensure_future(trigger.wait()), chat]
            await asyncio.wait(waits, timeout=30, return_when=asyncio.FIRST_COMPLETED)
            delay = {
                "streaming": rng.uniform(0, 0.8),
                "approval_pending": rng.uniform(0, 0.3),
                "command_running": rng.uniform(0, 0.5),
                "checkpoint": rng.uniform(0, 0.15),
            }[kind]
            await asyncio.sleep(delay)
            if trigger.is_set() and not chat.done():
                triggered.add(kind)
            os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(ErrorResponse, TimeoutError):
                await asyncio.wait_for(chat, 10)
            waits[0].cancel()
            await client.close()
            seen |= run.sessions

            left = await gone(lambda pid=pid: processes_of_session(pid))
            assert left == [], f"run {i} ({kind}): processes of the killed server remain: {left}"
            stray = await gone(lambda marker=marker: processes_with(marker))
            assert stray == [], f"run {i} ({kind}): commands of the killed server remain: {stray}"
            assert not list(workspace.glob("never-*")), f"run {i}: an unapproved command ran"
            check_nothing_unapproved_ran(private_data_dir, never_approved)

        # the last server's death too: one more server opens everything
        run = Run()
        script = tmp_path / "final.json"
        script.write_text(json.dumps({"turns": ["Fine."]}))
        client = await start(workspace, script, log, run)
        try:
            await check_previous_runs(client, seen, private_data_dir)
        finally:
            await client.close()
    finally:
        log.close()
    assert len(kinds) >= 50 and triggered == set(SCENARIOS), triggered
    assert len(seen) >= KILLS // 2
    verify_cli = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "server", "audit", "verify", stdout=asyncio.subprocess.PIPE
    )
    out, _ = await verify_cli.communicate()
    assert verify_cli.returncode == 0, out.decode()
    assert b"The audit log is intact" in out
