"""Memory: what checkpoints, saved sessions and reopening cost, each beside its alternative.

1. **Checkpoint of a 10,000-file workspace with one changed file** (what runs before a turn's
   first command): :meth:`ShadowRepo.snapshot`, .gitignore listing included; the first
   checkpoint of that workspace is reported too. Alternative, same run, same tree: the shadow
   repository the way Cline keeps one (``git add -A`` + ``git commit`` with its own
   ``GIT_DIR``).
2. **Streaming with sessions saved**: the stream_throughput measure (a scripted turn of 20,000
   tokens, tools off) on two servers, one saving sessions (the default) and one with
   ``memory.sessions: false`` (in process only), runs alternating. Tokens/s and first-delta
   latency, with the ratio.
3. **Reopening a 200-turn session**: a fresh server's first ``agent/session/load`` of a saved
   session of 200 turns (each with a tool call), and the same request warm; beside an
   ``agent/status`` ping on the same connection.

    .venv/bin/python benchmarks/memory.py [--quick] [--json PATH]
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import _common as c
from stream_throughput import TARGET_TOKENS, Counter, make_text, one_run

from engine.backends.base import Message
from engine.backends.scripted import split_into_tokens
from engine.memory.places import Places
from engine.memory.shadow import ShadowRepo
from engine.memory.store import SessionDB, StoredCall
from harness.connection import ErrorResponse, RpcClient

FILES = 10_000
LIMIT = 10 << 20


# --- 1. checkpoints -------------------------------------------------------------------------


def make_workspace(root: Path) -> list[Path]:
    """10,000 small source files in 100 folders, a .gitignore and some ignored build output."""
    rng = random.Random(11)
    files = []
    for i in range(FILES):
        folder = root / f"src{i % 100:02d}" / f"mod{i % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"file{i}.py"
        path.write_text("".join(f"value_{j} = {rng.random()!r}\n" for j in range(20)))
        files.append(path)
    (root / ".gitignore").write_text("build/\n*.pyc\n")
    (root / "build").mkdir()
    for i in range(50):
        (root / "build" / f"out{i}.o").write_bytes(os.urandom(512))
    return files


def cpu_now() -> float:
    """CPU seconds used so far by this process and its finished children (git)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def cline_style(git_dir: Path, workspace: Path) -> float:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "GIT_DIR": str(git_dir),
        "GIT_WORK_TREE": str(workspace),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "HOME": str(git_dir),
        "GIT_AUTHOR_NAME": "b",
        "GIT_AUTHOR_EMAIL": "b@x",
        "GIT_COMMITTER_NAME": "b",
        "GIT_COMMITTER_EMAIL": "b@x",
    }
    started = time.perf_counter()
    subprocess.run(["git", "add", "-A", "."], cwd=workspace, env=env, check=True)
    subprocess.run(
        ["git", "commit", "-q", "--allow-empty", "-m", "checkpoint"],
        cwd=workspace,
        env=env,
        check=True,
    )
    return time.perf_counter() - started


def checkpoints(runs: int, tmp: Path) -> dict[str, Any]:
    workspace = tmp / "ws"
    workspace.mkdir()
    files = make_workspace(workspace)
    repo = ShadowRepo(tmp / "shadow", workspace, max_file_bytes=LIMIT)
    started = time.perf_counter()
    first = repo.snapshot("first")
    first_seconds = time.perf_counter() - started
    cline_dir = tmp / "cline.git"
    subprocess.run(["git", "init", "-q", "--bare", str(cline_dir)], check=True)
    cline_first = cline_style(cline_dir, workspace)
    entries = len(repo.entries(first.commit))
    ours: list[float] = []
    theirs: list[float] = []
    ours_cpu: list[float] = []
    theirs_cpu: list[float] = []
    rng = random.Random(5)
    for i in range(runs + 1):
        target = rng.choice(files)
        target.write_text(target.read_text() + f"changed = {i}\n")
        pair = ["ours", "theirs"] if i % 2 else ["theirs", "ours"]
        for who in pair:
            cpu = cpu_now()
            if who == "ours":
                begin = time.perf_counter()
                repo.snapshot(f"run {i}", f"refs/gatehouse/bench/{i}/before")
                seconds = time.perf_counter() - begin
                if i:
                    ours.append(seconds)
                    ours_cpu.append(cpu_now() - cpu)
            else:
                seconds = cline_style(cline_dir, workspace)
                if i:
                    theirs.append(seconds)
                    theirs_cpu.append(cpu_now() - cpu)
    return {
        "files": FILES,
        "captured": entries,
        "first_seconds": first_seconds,
        "first_cline_seconds": cline_first,
        "one_changed_file": c.summary(ours),
        "one_changed_file_cline": c.summary(theirs),
        "one_changed_file_cpu": c.summary(ours_cpu),
        "one_changed_file_cline_cpu": c.summary(theirs_cpu),
    }


# --- 2. streaming with sessions saved --------------------------------------------------------


async def start(
    argv: Sequence[str], workspace: Path, counter: Counter | None, options: dict[str, Any]
) -> RpcClient:
    client = RpcClient()
    await client.start(argv, env=c.child_env(), cwd=c.REPO_ROOT, stderr=c.server_stderr())
    if counter is not None:
        client.on_notification("agent/stream", counter)
    params = c.initialize_params(workspace)
    params["initializationOptions"] = options
    await client.request("initialize", params)
    client.notify("initialized", {})
    return client


async def streaming(runs: int, tmp: Path) -> dict[str, Any]:
    text = make_text(TARGET_TOKENS)
    tokens = len(split_into_tokens(text))
    script = tmp / "stream.json"
    script.write_text(json.dumps({"turns": [text] * (runs + 1)}), encoding="utf-8")
    workspace = tmp / "stream-ws"
    workspace.mkdir()
    argv = (*c.GATEHOUSE_ARGV, "--backend", "scripted", "--script", str(script))
    saved, memory_only = Counter(), Counter()
    with_sessions = await start(argv, workspace, saved, {})
    in_process = await start(argv, workspace, memory_only, {"memory": {"sessions": False}})
    chat = {"prompt": "go", "enableTools": False}
    samples: dict[str, list[Any]] = {"saved": [], "in_process": []}
    try:
        for i in range(runs + 1):
            pair = [("saved", with_sessions, saved), ("in_process", in_process, memory_only)]
            if i % 2:
                pair.reverse()
            for name, client, counter in pair:
                sample = await one_run(client, counter, "agent/chat", chat)
                assert "".join(counter.texts) == text
                if i:
                    samples[name].append(sample)
        listed = await with_sessions.request("agent/sessions", {})
        assert len(listed["sessions"]) == runs + 1, "the saving server did not save its sessions"
    finally:
        await with_sessions.close()
        await in_process.close()
    out: dict[str, Any] = {"tokens_per_run": tokens}
    for name, got in samples.items():
        out[name] = {
            "tokens_per_second": c.summary([tokens / s.seconds for s in got]),
            "first_delta_seconds": c.summary([s.first_delta for s in got]),
            # CPU time is counted in clock ticks: summed over all runs, it is precise enough
            "server_cpu_per_token": sum(s.server_cpu for s in got) / (tokens * len(got)),
        }
    out["paired_ratio"] = c.summary(
        [
            b.seconds / a.seconds
            for a, b in zip(samples["saved"], samples["in_process"], strict=True)
        ]
    )
    return out


# --- 3. reopening a long session -------------------------------------------------------------


def save_long_session(workspace: Path, turns: int) -> str:
    places = Places.for_workspace(workspace, c.data_dir())
    places.prepare()
    db = SessionDB(places.sessions_db)
    session_id = "s_" + "b" * 16
    seq = 0
    for n in range(1, turns + 1):
        prompt = f"Turn {n}: please look at module {n} and tell me what it does. " * 3
        db.begin_turn(session_id, n, prompt, model="bench", settings={}, first_seq=seq, owner="0:x")
        call_id = f"call_{n:04d}"
        answer = "It computes values and prints them; nothing else happens in it. " * 8
        for message in (
            Message("user", prompt),
            Message(
                "assistant",
                f'<tool_call>{{"name": "read_file", "arguments": {{"path": "m{n}.py"}}}}',
            ),
            Message("tool", "value = 1\n" * 40, "read_file", call_id, "completed"),
            Message("assistant", answer),
        ):
            db.add_message(session_id, seq, n, message)
            seq += 1
        call = StoredCall(call_id, "read_file", {"path": f"m{n}.py"}, "completed", None,
                          "value = 1\n" * 40, "allow", "not_required")  # fmt: skip
        db.record_call(session_id, n, 0, call)
        db.end_turn(session_id, n, "end_turn", answer)
    db.close()
    return session_id


async def reopening(runs: int, tmp: Path) -> dict[str, Any]:
    workspace = tmp / "long-ws"
    workspace.mkdir()
    session_id = save_long_session(workspace, 200)
    argv = (*c.GATEHOUSE_ARGV, "--backend", "scripted", "--script", str(tmp / "stream.json"))
    cold: list[float] = []
    warm: list[float] = []
    ping: list[float] = []
    for _ in range(runs):
        client = await start(argv, workspace, None, {})
        try:
            await client.request("agent/status", {})
            begin = time.perf_counter()
            loaded = await client.request("agent/session/load", {"sessionId": session_id})
            cold.append(time.perf_counter() - begin)
            assert len(loaded["turns"]) == 200
            for _ in range(5):
                begin = time.perf_counter()
                await client.request("agent/session/load", {"sessionId": session_id})
                warm.append(time.perf_counter() - begin)
                begin = time.perf_counter()
                await client.request("agent/status", {})
                ping.append(time.perf_counter() - begin)
        finally:
            await client.close()
    return {
        "turns": 200,
        "first_load": c.summary(cold),
        "warm_load": c.summary(warm),
        "status_ping": c.summary(ping),
    }


def run(quick: bool) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="gatehouse-bench-") as name:
        tmp = Path(name)
        cp = checkpoints(5 if quick else 20, tmp)
        stream = asyncio.run(streaming(5 if quick else 60, tmp))
        reopen = asyncio.run(reopening(3 if quick else 10, tmp))
    ratio = (
        stream["saved"]["tokens_per_second"]["median"]
        / stream["in_process"]["tokens_per_second"]["median"]
    )
    one = cp["one_changed_file"]
    cpu_ratio = (
        stream["saved"]["server_cpu_per_token"] / stream["in_process"]["server_cpu_per_token"]
    )
    headline = [
        ["memory: checkpoint, 10,000 files, 1 changed: median (p90)",
         f"{c.ms(one['median'])} ({c.ms(one['p90'])})"],
        ["memory: same with git add -A + commit (Cline-style) median",
         c.ms(cp["one_changed_file_cline"]["median"])],
        ["memory: CPU per checkpoint (git included): ours / Cline-style",
         f"{c.ms(cp['one_changed_file_cpu']['median'])} / "
         f"{c.ms(cp['one_changed_file_cline_cpu']['median'])}"],
        ["memory: first checkpoint of that workspace (Cline-style)",
         f"{c.ms(cp['first_seconds'])} ({c.ms(cp['first_cline_seconds'])})"],
        ["memory: stream tokens/s, sessions saved / in process",
         f"{c.rate(stream['saved']['tokens_per_second']['median'])} / "
         f"{c.rate(stream['in_process']['tokens_per_second']['median'])} ({c.ratio(ratio)})"],
        ["memory: server CPU per token, sessions saved / in process",
         f"{stream['saved']['server_cpu_per_token'] * 1e6:.1f} us / "
         f"{stream['in_process']['server_cpu_per_token'] * 1e6:.1f} us "
         f"({c.ratio(cpu_ratio)})"],
        ["memory: first delta, sessions saved / in process (median)",
         f"{c.ms(stream['saved']['first_delta_seconds']['median'])} / "
         f"{c.ms(stream['in_process']['first_delta_seconds']['median'])}"],
        ["memory: reopen a 200-turn session, fresh server median (p90)",
         f"{c.ms(reopen['first_load']['median'])} ({c.ms(reopen['first_load']['p90'])})"],
        ["memory: reopen warm / agent/status ping (median)",
         f"{c.ms(reopen['warm_load']['median'])} / {c.ms(reopen['status_ping']['median'])}"],
    ]  # fmt: skip
    return {
        "benchmark": "memory",
        "machine": c.machine(),
        "quick": quick,
        "checkpoints": cp,
        "streaming": stream,
        "stream_ratio_saved_over_in_process": ratio,
        "stream_cpu_ratio_saved_over_in_process": cpu_ratio,
        "reopening": reopen,
        "headline": headline,
    }


def report(result: dict[str, Any]) -> str:
    return c.table("Memory", ["measure", "result"], result["headline"])


def main(argv: Sequence[str] | None = None) -> int:
    return c.script_main(__doc__, run, report, argv, errors=(ErrorResponse,))


if __name__ == "__main__":
    sys.exit(main())
