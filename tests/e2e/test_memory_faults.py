"""A full disk under the data folder: a clear error, nothing runs, and the server keeps serving.

The data folder is a tiny tmpfs, filled up before the server starts, mounted in a private mount
namespace (``unshare -m``, root only) so nothing outside the test sees it.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from harness.connection import ErrorResponse, RpcClient

FULL = ("No space left on device", "disk is full", "database or disk is full")
pytestmark = pytest.mark.skipif(
    sys.platform != "linux" or os.geteuid() != 0 or shutil.which("unshare") is None,
    reason="needs root and unshare(1) for a private tmpfs",
)


def call(name: str, **arguments: Any) -> str:
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


async def test_a_full_disk_refuses_code_says_why_and_the_server_keeps_serving(
    tmp_path: Path, private_data_dir: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    script = tmp_path / "script.json"
    turns = [call("terminal", command="touch ran.txt"), "It did not run.", "Still here."]
    script.write_text(json.dumps({"turns": turns}))
    fill = 'mount -t tmpfs -o size=64k tmpfs "$0" && (dd if=/dev/zero of="$0/fill" bs=1k ' \
        '2>/dev/null || true) && exec "$@"'  # fmt: skip
    argv = ["unshare", "-m", "--propagation", "private", "sh", "-c", fill, str(private_data_dir),
            sys.executable, "-m", "server", "serve", "--backend", "scripted", "--script",
            str(script), "--workspace", str(workspace), "--log-level", "WARNING"]  # fmt: skip
    client = RpcClient()
    stream: list[dict[str, Any]] = []
    client.on_notification("agent/stream", stream.append)

    async def allow(_params: Any) -> Any:
        return {"decision": "allow"}

    client.on_request("toolConfirm", allow)
    await client.start(argv)
    try:
        await client.request(
            "initialize",
            {"processId": os.getpid(), "rootUri": workspace.as_uri(),
             "capabilities": {"experimental": {"toolConfirm": True}}},
        )  # fmt: skip
        client.notify("initialized", {})
        result = await client.request("agent/chat", {"prompt": "make a file"})
        (summary,) = result["toolCalls"]
        assert summary["status"] == "failed"
        assert not (workspace / "ran.txt").exists()
        (end,) = [e for e in stream if e["type"] == "tool_end"]
        assert "not run" in end["result"] and any(f in end["result"] for f in FULL), end
        notes = " ".join(e["text"] for e in stream if e["type"] == "status")
        assert "not being saved" in notes and any(f in notes for f in FULL), notes

        try:
            await client.request("agent/sessions", {})
            raise AssertionError("agent/sessions worked on a full disk")
        except ErrorResponse as exc:
            assert exc.code == -32600
            assert exc.data["reason"] == "memory_unavailable"
            assert any(f in exc.message for f in FULL), exc.message

        status = await client.request("agent/status", {})
        assert status["sessions"][0]["sessionId"] == result["sessionId"]
        again = await client.request(
            "agent/chat", {"prompt": "still there?", "sessionId": result["sessionId"]}
        )
        assert again["text"] == "Still here."
    finally:
        await client.close()
