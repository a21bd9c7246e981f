"""Which process has a session open: ``pid:start-time``, so a reused pid is told apart and a
dead owner's claim (a server killed with ``kill -9``) can be taken over."""

from __future__ import annotations

import os


def process_identity(pid: int | None = None) -> str:
    """``pid:start-time`` of a process (the start time tells a reused pid apart)."""
    pid = os.getpid() if pid is None else pid
    return f"{pid}:{_start_time(pid)}"


def _start_time(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
        return stat[stat.rfind(b")") + 2 :].split()[19].decode()
    except (OSError, IndexError):
        return "?"


def owner_alive(owner: str | None) -> bool:
    """Whether the process that claimed a session still runs."""
    if not owner:
        return False
    pid_text, _, start = owner.partition(":")
    try:
        pid = int(pid_text)
    except ValueError:
        return False
    if pid == os.getpid():
        return True
    return _start_time(pid) == start and start != "?"
