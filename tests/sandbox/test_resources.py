"""Resources: bombs, loops, floods and daemons are contained, end with the call, leave nothing
behind, and the server answers ``agent/status`` all along."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from tests.e2e.conftest import StartServer
from tests.sandbox.conftest import (
    PY,
    Run,
    assert_nothing_left,
    assert_ran_strong,
    attempts,
    leftovers,
    python,
    require_strong,
    run_calls,
    status_answers,
    terminal,
    wait_running,
)

MARGIN = 30.0
"""Added to the tool timeout for "the call ended in time" (start-up, kill and clean-up)."""

FORK_BOMB = """
import os, sys, time
print('STARTED', flush=True)
# Bounded by its own guard: every process forks at most ROUNDS times, so even with no limit at
# all there would be at most 2**ROUNDS processes (the sandbox's limit is far lower).
ROUNDS = 10
refused = 0
for _ in range(ROUNDS):
    try:
        os.fork()
    except OSError:
        refused += 1
if refused:
    print('REFUSED', refused, flush=True)
time.sleep(300)  # never ends by itself: the tool timeout must kill the whole tree
"""


async def test_a_fork_bomb(start_server: StartServer, tmp_path: Path, marker: str) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "bomb.py").write_text(FORK_BOMB)
    timeout = 5
    peer = await start_server(
        attempts(terminal(f"{PY} bomb.py {marker}")),
        init_options={"toolTimeoutSeconds": timeout},
    )
    require_strong(peer)
    started = time.monotonic()
    chat = peer.send_chat()
    await wait_running(peer, "STARTED")
    during = await status_answers(peer)
    result = await asyncio.wait_for(chat, timeout + MARGIN)
    elapsed = time.monotonic() - started
    run = Run(peer, result)
    await status_answers(peer)

    assert_ran_strong(run, 1)
    end = run.ends[0]
    assert end["status"] == "failed" and "toolTimeoutSeconds" in end["result"], end
    assert "REFUSED" in "".join(m["text"] for m in peer.of_type("tool_output")), (
        "no fork was refused: the process limit did not hold"
    )
    assert elapsed < timeout + MARGIN
    assert [s["running"] for s in during["sessions"]] == [True]  # answered during the bomb
    await assert_nothing_left([marker], ws)


MEMORY_BOMB = """
import sys
CHUNK = 256 << 20
held = []
print('STARTED', flush=True)
try:
    for i in range(64):  # 64 x 256 MiB = 16 GiB
        # RLIMIT_DATA counts reserved memory: no need to write 4 GiB to hit the limit (and
        # without a limit, 16 GiB of untouched chunks would be granted under overcommit).
        held.append(bytes(CHUNK))  # calloc: reserved, not written
except MemoryError:
    print(f'MemoryError after {len(held)} chunks ({len(held) * 256} MiB)', flush=True)
    sys.exit(3)
print(f'ALLOCATED {len(held) * 256} MiB')
"""


async def test_a_memory_bomb(start_server: StartServer, tmp_path: Path) -> None:
    peer = await start_server(attempts(python(MEMORY_BOMB)))
    require_strong(peer)
    chat = peer.send_chat()
    await wait_running(peer, "STARTED")
    await status_answers(peer)
    run = Run(peer, await asyncio.wait_for(chat, 120))
    await status_answers(peer)

    assert_ran_strong(run, 1)
    end = run.ends[0]
    assert "MemoryError after" in end["result"], end
    assert "ALLOCATED" not in end["result"]
    assert end["exitCode"] == 3
    await assert_nothing_left([], tmp_path / "ws")


async def test_an_infinite_loop(start_server: StartServer, tmp_path: Path, marker: str) -> None:
    timeout = 3
    peer = await start_server(
        attempts(terminal(f"{PY} -c 'while True: pass' {marker}")),
        init_options={"toolTimeoutSeconds": timeout},
    )
    require_strong(peer)
    started = time.monotonic()
    chat = peer.send_chat()
    await wait_running(peer)
    during = await status_answers(peer)
    # The leftover check can see a running sandbox (so its "nothing left" means something).
    await peer.wait_for(lambda: any("(bwrap)" in p for p in leftovers([], tmp_path / "ws")), 10)
    run = Run(peer, await asyncio.wait_for(chat, timeout + MARGIN))
    elapsed = time.monotonic() - started

    assert_ran_strong(run, 1)
    end = run.ends[0]
    assert end["status"] == "failed", end
    assert "[gatehouse] Killed after 3 s (toolTimeoutSeconds)." in end["result"]
    assert [s["running"] for s in during["sessions"]] == [True]
    assert elapsed < timeout + MARGIN
    await status_answers(peer)
    await assert_nothing_left([marker], tmp_path / "ws")


async def test_200_mb_of_output(start_server: StartServer, tmp_path: Path, marker: str) -> None:
    peer = await start_server(attempts(terminal(f"yes {marker} | head -c 200000000")))
    require_strong(peer)
    chat = peer.send_chat()
    await wait_running(peer, marker)
    await status_answers(peer)
    run = Run(peer, await asyncio.wait_for(chat, 120))
    await status_answers(peer)

    assert_ran_strong(run, 1)
    end = run.ends[0]
    assert end["status"] == "failed", end
    assert "(the output limit)" in end["result"]
    assert len(end["result"]) < 100_000
    assert len(run.result["toolCalls"]) == 1
    streamed = sum(len(m["text"]) for m in peer.of_type("tool_output"))
    assert streamed < 2_000_000  # live output is capped too (1 MiB plus notices)
    await assert_nothing_left([marker], tmp_path / "ws")


DAEMON = """
import os, sys, time
if os.fork():
    os._exit(0)
os.setsid()
if os.fork():
    os._exit(0)
null = os.open(os.devnull, os.O_RDWR)
for fd in (0, 1, 2):
    os.dup2(null, fd)
with open('heartbeat', 'a') as out:
    while True:
        out.write('.')
        out.flush()
        time.sleep(0.1)
"""


async def test_a_daemon_that_outlives_the_call(
    start_server: StartServer, tmp_path: Path, marker: str
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "daemon.py").write_text(DAEMON)
    command = (
        f"setsid bash -c '(exec -a {marker}-sleep sleep 300 &) ; exit'; "
        f"{PY} daemon.py {marker}-py; "
        "while [ ! -s heartbeat ]; do sleep 0.05; done; echo daemon-running"
    )
    run = await run_calls(start_server, terminal(command))

    assert "daemon-running" in run.ends[0]["result"]
    await assert_nothing_left([marker], ws)
    size = (ws / "heartbeat").stat().st_size
    await asyncio.sleep(1.0)
    assert (ws / "heartbeat").stat().st_size == size, "the daemon still writes after the call"
    await status_answers(run.peer)
