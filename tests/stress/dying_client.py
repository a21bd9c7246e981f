"""A client that dies: it starts a server, brings a turn to the moment asked for (streaming, an
approval pending, a command running), prints the server's pid, and waits to be killed.

    python -m tests.stress.dying_client TMP WHEN MARKER

Also used in process by the fault tests (:func:`start_at`) for a client that closes stdin."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from tests.stress.wire import NO_ANSWER, WireServer, hermes_call, processes_with, start_server

MOMENTS = ("streaming", "approval_pending", "command_running")

SLOW = {"text": "a slow answer " * 200, "chunkDelayMs": 20}


def tree_command(marker: str) -> str:
    """A command that starts a daemon in a new session (setsid) and then waits."""
    return f"setsid sleep 1000{marker} > /dev/null 2>&1 & sleep 1000{marker}"


def start_at(tmp_path: Path, when: str, marker: str) -> WireServer:
    """A server whose turn is at ``when``: streaming, waiting for an approval, or running a
    command tree (whose processes hold ``marker`` in their command lines)."""
    scripts: dict[str, list[Any]] = {
        "streaming": [SLOW],
        "approval_pending": [hermes_call("terminal", command="touch ran.txt")],
        "command_running": [hermes_call("terminal", command=tree_command(marker))],
    }
    turns = scripts[when]
    if when == "approval_pending":
        server = start_server(tmp_path, turns, answer=lambda _p: NO_ANSWER)
    else:
        server = start_server(tmp_path, turns, answer=lambda _p: {"decision": "allow"})
    server.send({"jsonrpc": "2.0", "id": "c", "method": "agent/chat", "params": {"prompt": "go"}})
    if when == "streaming":
        server.wait_until(lambda: any(e["type"] == "content" for e in server.stream()))
    elif when == "approval_pending":
        server.wait_until(lambda: bool(server.approvals))
    else:
        server.wait_until(lambda: bool(processes_with(marker)), 60)
    return server


def main(argv: list[str]) -> None:
    tmp, when, marker = argv
    server = start_at(Path(tmp), when, marker)
    sys.stdout.write(f"{server.proc.pid}\n")
    sys.stdout.flush()
    time.sleep(600)  # until killed


if __name__ == "__main__":
    main(sys.argv[1:])
