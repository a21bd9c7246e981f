"""The network: with the default settings a command reaches nothing, not even the host's
loopback (TCP, UDP, abstract UNIX sockets)."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

from tests.e2e.conftest import StartServer
from tests.sandbox.conftest import (
    Listeners,
    assert_nothing_left,
    python,
    run_calls,
    tcp_attempt,
)

WAIT_AFTER_CALL = 2.0
"""How long the listeners keep watching after the call ended."""


def udp_attempt(port: int, marker: str) -> str:
    return f"""
import socket
for host in ('127.0.0.1', 'localhost'):
    try:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        for _ in range(5):
            s.sendto(b'{marker}', (host, {port}))
        print('sent', host)
    except OSError as exc:
        print('blocked', host, type(exc).__name__, exc)
"""


async def test_reaching_a_tcp_listener_on_the_host(
    start_server: StartServer, listeners: Listeners, marker: str, tmp_path: Path
) -> None:
    run = await run_calls(start_server, python(tcp_attempt(listeners.tcp_port, marker)))
    await asyncio.sleep(WAIT_AFTER_CALL)

    assert listeners.tcp_seen == [], "a sandboxed command connected to the host's loopback"
    assert "CONNECTED" not in run.ends[0]["result"]
    assert "blocked 127.0.0.1" in run.ends[0]["result"]
    assert run.ends[0]["sandbox"]["network"] is False
    await assert_nothing_left([marker], tmp_path / "ws")


async def test_reaching_a_udp_listener_on_the_host(
    start_server: StartServer, listeners: Listeners, marker: str, tmp_path: Path
) -> None:
    run = await run_calls(start_server, python(udp_attempt(listeners.udp_port, marker)))
    await asyncio.sleep(WAIT_AFTER_CALL)

    assert listeners.udp_seen == [], "a sandboxed command's datagram reached the host"
    assert run.ends[0]["exitCode"] == 0  # it ran (sending into its own empty loopback works)
    await assert_nothing_left([marker], tmp_path / "ws")


async def test_reaching_an_abstract_unix_socket_on_the_host(
    start_server: StartServer, marker: str, tmp_path: Path
) -> None:
    """Abstract UNIX sockets (X11's @/tmp/.X11-unix, D-Bus) have no file to hide: only a
    network namespace keeps them out of reach."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(f"\0{marker}")
    server.listen(4)
    server.setblocking(False)
    try:
        code = f"""
import socket
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect('\\0{marker}')
    s.sendall(b'hello')
    print('CONNECTED')
except OSError as exc:
    print('blocked', type(exc).__name__, exc)
"""
        run = await run_calls(start_server, python(code))
        await asyncio.sleep(0.5)
        try:
            conn, _ = server.accept()
        except BlockingIOError:
            conn = None
        if conn is not None:
            conn.close()
        assert conn is None, "a sandboxed command connected to an abstract UNIX socket"
        assert "blocked" in run.ends[0]["result"]
    finally:
        server.close()
    await assert_nothing_left([marker], tmp_path / "ws")
