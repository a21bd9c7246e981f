"""The read-only tools run in the server, outside the sandbox (issue 8, findings 3 and 4): a
folder swapped for a link by approved code in another session must not lead them out of the
workspace, and no pattern may freeze the server."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

from tests.e2e.conftest import StartServer, tool_call
from tests.sandbox.conftest import python, status_answers, wait_running

WATCHER = """
import os, time
ws, target = {ws!r}, {target!r}
real, away, stop = ws + '/a', ws + '/a_real', ws + '/stop'
swaps, started = 0, time.monotonic()
print('swapping', flush=True)
while not os.path.exists(stop) and time.monotonic() - started < 90:
    os.rename(real, away)
    os.symlink(target, real)
    time.sleep(0.003)
    os.unlink(real)
    os.rename(away, real)
    time.sleep(0.003)
    swaps += 1
print('swaps', swaps)
"""


async def test_a_search_never_follows_a_folder_another_session_swaps_for_a_link(
    start_server: StartServer, tmp_path: Path
) -> None:
    """Finding 3: an approved watcher in session A renames ``a`` and plants ``a -> ~/.ssh``
    over and over while session B searches, reads and lists ``a``. Nothing from ``~/.ssh``
    (hidden from the sandbox) may ever reach B."""
    ws = tmp_path / "ws"
    (ws / "a").mkdir(parents=True)
    for i in range(200):  # the walk spends time in "a", where the swap happens
        (ws / "a" / f"f{i:03}.txt").write_text("plain\n")
    (ws / "a" / "id_rsa").write_text("an ordinary file\n")
    ssh = tmp_path / "home" / ".ssh"
    ssh.mkdir(parents=True)
    secret = f"ghsecret{uuid.uuid4().hex}"
    (ssh / "id_rsa").write_text(f"-----BEGIN OPENSSH PRIVATE KEY-----\n{secret}\n")
    reads = []
    for i in range(40):
        pattern = f"^ghsecret[0-9a-f]+$|ordinary|zz{i}"  # varied: identical calls are skipped
        reads.append(tool_call("search_files", pattern=pattern, **({"path": "a"} if i % 2 else {})))
        reads.append(tool_call("read_file", path=f"a/{'id_rsa' if i % 2 else './id_rsa'}"))
        reads.append(tool_call("list_files", path="a" if i % 2 else "./a"))
    watcher = python(WATCHER.format(ws=str(ws), target=str(ssh)))
    turns = [watcher, *reads, "B done.", "A done."]
    peer = await start_server(turns)
    session_a = peer.send_chat("watch")
    await wait_running(peer, "swapping")
    result_b = await asyncio.wait_for(peer.chat("search", maxToolCalls=200), 300)
    (ws / "stop").write_text("")
    result_a = await asyncio.wait_for(session_a, 120)

    assert result_b["stopReason"] == "end_turn" and result_a["stopReason"] == "end_turn"
    ends = peer.of_type("tool_end")
    watcher_end = next(e for e in ends if e["name"] == "python")
    assert "swaps" in watcher_end["result"], watcher_end
    searched = [e for e in ends if e["name"] != "python"]
    assert len(searched) == len(reads)
    assert secret not in str(peer.stream) and secret not in str(result_b)
    assert any("ordinary" in e["result"] for e in searched)  # the real folder was searched


async def test_a_catastrophic_pattern_does_not_freeze_the_server(
    start_server: StartServer, tmp_path: Path
) -> None:
    """Finding 4: ``search_files {"pattern": "^(\\\\w+)+$"}`` over a long identifier blocked the
    event loop: no ``agent/status``, no cancel, no approvals, in any session. The server must
    keep answering, and a pattern that really takes exponential time must end at the tool's time
    limit with a clear result."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "ident.py").write_text("x = " + "a" * 40 + "!\n" + "b" * 5000 + "!\n")
    turns = [
        tool_call("search_files", pattern=r"^(\w+)+$"),
        tool_call("search_files", pattern=r"^(\w|\w)*$"),
        "Done.",
    ]
    timeout = 3.0
    peer = await start_server(turns, init_options={"toolTimeoutSeconds": timeout})
    started = time.monotonic()
    chat = peer.send_chat()
    worst = 0.0
    while not chat.done():
        asked = time.monotonic()
        await status_answers(peer, seconds=1.0)  # fails the test if a ping takes > 1 s
        worst = max(worst, time.monotonic() - asked)
        await asyncio.sleep(0.05)
    result = await chat
    elapsed = time.monotonic() - started

    ends = peer.of_type("tool_end")
    assert [e["status"] for e in ends] == ["completed", "completed"], ends
    assert "No matches" in ends[0]["result"]
    assert "ran out of time" in ends[1]["result"], ends[1]
    assert result["stopReason"] == "end_turn"
    assert elapsed < 2 * timeout + 5, elapsed  # the search stopped at its limit
    assert worst < 1.0, worst
