"""A command dies with the server that started it, even when the server is killed with SIGKILL
(no clean-up runs): the kernel kills it (``setpriv --pdeathsig``), at every level with a chain;
at the strong level a watcher kills the chain's process group (what bubblewrap forked before it
armed any death signal), and a command whose server died while bubblewrap set
the sandbox up never starts (the handshake)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from sandbox.lifeline import HANDSHAKE_ENV, HANDSHAKE_REFUSED
from sandbox.probe import probe

pytestmark = pytest.mark.skipif(
    sys.platform != "linux" or shutil.which("setpriv") is None, reason="util-linux setpriv"
)

SERVER = """
import os, subprocess, sys
from pathlib import Path
from sandbox.info import SandboxInfo
from sandbox.policy import SandboxSettings
from sandbox.tiers import Sandbox
lifeline = sys.argv[1] == "on"
sandbox = Sandbox(SandboxInfo("limits-only", False, "test"), SandboxSettings(min_level="none"))
if not lifeline:
    sandbox.setpriv = None
launch, _ = sandbox.prepare(
    ("/bin/sh", "-c", "sleep 30; :", os.environ["MARKER"]),
    cwd=Path.cwd(),
    scratch=Path.cwd(),
    bypass=False,
)
proc = subprocess.Popen(launch.argv, env=dict(launch.env), start_new_session=True)
print(proc.pid, flush=True)
sys.stdin.readline()
"""


def alive(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    stat = (entry / "stat").read_text()
                    if stat[stat.rfind(")") + 2] != "Z":
                        found.append(int(entry.name))
            except OSError:
                continue
    return found


def started(marker: str) -> bool:
    """Whether the command itself runs (its ``$0`` is the marker), not only a shell that will
    start it (whose script merely contains the marker)."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes().split(b"\0"):
                    return True
            except OSError:
                continue
    return False


FORKING_SERVER = """
import os, shutil, subprocess, sys
from sandbox.lifeline import lifeline_args
watch = sys.argv[1] == "on"
# the chain's first program forks a child that has no death signal of its own, as bubblewrap's
# namespace init has none until its parent has set it up
forks = "/bin/sh -c 'sleep 30; :' " + os.environ["MARKER"] + " & wait"
argv = [*lifeline_args(shutil.which("setpriv"), watch=watch), "/bin/sh", "-c", forks]
proc = subprocess.Popen(argv, start_new_session=True)
print(proc.pid, flush=True)
sys.stdin.readline()
"""


def killed_server_leaves(
    lifeline: bool, tmp_path: Path, server_code: str = SERVER, patience: float = 10.0
) -> list[int]:
    """What is left of the command 10 s after its server was killed (``patience``: a control run
    expects something left, and needs only show it outlived the kill)."""
    marker = f"lifeline{uuid.uuid4().hex}"
    server = subprocess.Popen(
        [sys.executable, "-c", server_code, "on" if lifeline else "off"],
        env={**os.environ, "MARKER": marker},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        cwd=tmp_path,
        text=True,
    )
    assert server.stdout is not None
    server.stdout.readline()
    deadline = time.monotonic() + 10
    while not started(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert started(marker), "the command never started"
    server.kill()  # SIGKILL: no clean-up of the server's runs
    server.wait()
    deadline = time.monotonic() + patience
    while alive(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    return alive(marker)


def test_a_command_dies_with_a_server_killed_by_sigkill(tmp_path: Path) -> None:
    assert killed_server_leaves(True, tmp_path) == []


def test_without_the_lifeline_the_command_would_outlive_it(tmp_path: Path) -> None:
    left = killed_server_leaves(False, tmp_path, patience=2.0)
    try:
        assert left, "the control run should leave the command running"
    finally:
        for pid in left:
            subprocess.run(["kill", "-9", str(pid)], check=False)


def test_the_watcher_kills_what_the_chain_forked_before_any_death_signal(
    tmp_path: Path,
) -> None:
    assert killed_server_leaves(True, tmp_path, FORKING_SERVER) == []


def test_without_the_watcher_that_child_would_outlive_the_server(tmp_path: Path) -> None:
    left = killed_server_leaves(False, tmp_path, FORKING_SERVER, patience=2.0)
    try:
        assert left, "the control run should leave the forked child running"
    finally:
        for pid in left:
            subprocess.run(["kill", "-9", str(pid)], check=False)


# --- the strong level's handshake ------------------------------------------------------------


@pytest.fixture(scope="module")
def strong() -> Any:
    sandbox = replace(probe().sandbox, trees=[])  # no cgroups: no stdin gate before bwrap
    if sandbox.info.level != "strong":
        pytest.skip(f"the handshake is the strong level's ({sandbox.info.level} here)")
    return sandbox


def start_in_sandbox(sandbox: Any, tmp_path: Path) -> tuple[subprocess.Popen[bytes], int, int]:
    """A command launched the way the runner launches it; the server's ends of the handshake."""
    launch, _ = sandbox.prepare(
        ("/bin/sh", "-c", "echo ran > ran.txt"),
        cwd=tmp_path,
        scratch=tmp_path,
        bypass=False,
        handshake=True,
    )
    assert launch.handshake
    ready_r, ready_w = os.pipe()
    go_r, go_w = os.pipe()
    env = {**launch.env, HANDSHAKE_ENV: f"{ready_w},{go_r}"}
    proc = subprocess.Popen(
        launch.argv, cwd=launch.cwd, env=env, pass_fds=(*launch.pass_fds, ready_w, go_r)
    )
    os.close(ready_w)
    os.close(go_r)
    return proc, ready_r, go_w


def test_a_command_whose_server_died_before_the_handshake_never_starts(
    strong: Any, tmp_path: Path
) -> None:
    proc, ready_r, go_w = start_in_sandbox(strong, tmp_path)
    assert os.read(ready_r, 1) == b"\n"  # the sandbox is set up and waits
    os.close(go_w)  # what a server killed now leaves: no answer, ever
    assert proc.wait(timeout=30) == HANDSHAKE_REFUSED
    os.close(ready_r)
    assert not (tmp_path / "ran.txt").exists()


def test_a_command_starts_once_the_server_answers_the_handshake(
    strong: Any, tmp_path: Path
) -> None:
    proc, ready_r, go_w = start_in_sandbox(strong, tmp_path)
    assert os.read(ready_r, 1) == b"\n"
    os.write(go_w, b"\n")
    os.close(go_w)
    os.close(ready_r)
    assert proc.wait(timeout=30) == 0
    assert (tmp_path / "ran.txt").read_text() == "ran\n"
    assert HANDSHAKE_ENV not in (tmp_path / "ran.txt").read_text()
