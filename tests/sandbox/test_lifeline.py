"""A command dies with the server that started it, even when the server is killed with SIGKILL
(no clean-up runs): the kernel kills it (``setpriv --pdeathsig``), at every level with a chain."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

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


def killed_server_leaves(lifeline: bool, tmp_path: Path) -> list[int]:
    marker = f"lifeline{uuid.uuid4().hex}"
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER, "on" if lifeline else "off"],
        env={**os.environ, "MARKER": marker},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        cwd=tmp_path,
        text=True,
    )
    assert server.stdout is not None
    server.stdout.readline()
    deadline = time.monotonic() + 10
    while not alive(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert alive(marker), "the command never started"
    server.kill()  # SIGKILL: no clean-up of the server's runs
    server.wait()
    deadline = time.monotonic() + 10
    while alive(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    return alive(marker)


def test_a_command_dies_with_a_server_killed_by_sigkill(tmp_path: Path) -> None:
    assert killed_server_leaves(True, tmp_path) == []


def test_without_the_lifeline_the_command_would_outlive_it(tmp_path: Path) -> None:
    left = killed_server_leaves(False, tmp_path)
    try:
        assert left, "the control run should leave the command running"
    finally:
        for pid in left:
            subprocess.run(["kill", "-9", str(pid)], check=False)
