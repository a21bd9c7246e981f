"""The configured sandbox: how a command is launched at the level this machine supports.

Every level starts the command with a from-scratch environment. Above ``none`` the chain is::

    sh (reads one line: sent once the server has put it in the command's cgroups)
      -> prlimit (resource limits)        | or the Python launcher (limits, Landlock, seccomp)
        -> bwrap (strong tier only)
          -> the command

so limits and confinement are applied by ``exec`` before the command starts, never by a
``preexec_fn`` in the server. The ``sh`` gate costs about a millisecond and exists only when
cgroups are in use. A POSIX shell's ``read`` takes a pipe byte by byte, so whatever the server
writes after that line (the ``python`` tool's code) is the command's stdin.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sandbox.bwrap import bwrap_argv, reexposed_paths
from sandbox.cgroups import CommandGroup, _Tree
from sandbox.environment import scrub_environment
from sandbox.info import UNSANDBOXED, SandboxInfo
from sandbox.paths import HIDDEN_ROOTS
from sandbox.policy import Limits, SandboxSettings, level_rank

_GATE_SCRIPT = 'read -r _ || exit 125; exec "$@"'
"""Waits for the server's newline on stdin (the rest of stdin is the command's), then execs."""
LAUNCHER = str(Path(__file__).with_name("launcher.py"))


@dataclass(frozen=True)
class Launch:
    """What the runner executes."""

    argv: tuple[str, ...]
    env: Mapping[str, str]
    cwd: Path
    group: CommandGroup | None = None
    """When set, the first process waits for a line on stdin, sent once it is in ``group``."""


def _user_processes() -> int:
    uid = os.getuid()
    count = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    count += 1
            except OSError:
                continue
    return count


def _nproc_limit(limits: Limits, *, cgroup_limits: bool) -> int | None:
    """RLIMIT_NPROC counts every process of the user, and never applies to root."""
    if cgroup_limits or os.getuid() == 0:
        return None
    return _user_processes() + limits.processes


def prlimit_args(prlimit: str, limits: Limits, nproc: int | None) -> list[str]:
    args = [
        prlimit,
        f"--cpu={limits.cpu_seconds}",
        f"--data={limits.memory_bytes}",
        f"--fsize={limits.file_size_bytes}",
        f"--nofile={limits.open_files}",
        "--core=0",
    ]
    if nproc is not None:
        args.append(f"--nproc={nproc}")
    return [*args, "--"]


def launcher_args(config: dict[str, Any]) -> list[str]:
    """The launcher, started by the base interpreter's real path: a virtual environment (which
    may sit in the writable workspace) plays no part in starting it."""
    python = os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable)
    return [python, "-S", "-I", LAUNCHER, json.dumps(config, separators=(",", ":")), "--"]


def rlimit_config(limits: Limits, nproc: int | None) -> dict[str, Any]:
    return {
        "cpu": limits.cpu_seconds,
        "data": limits.memory_bytes,
        "fsize": limits.file_size_bytes,
        "nofile": limits.open_files,
        "nproc": nproc,
        "core": 0,
    }


@dataclass
class Sandbox:
    """The isolation every approved command runs under, as probed at start-up."""

    info: SandboxInfo
    settings: SandboxSettings = field(default_factory=SandboxSettings)
    bwrap: str | None = None
    prlimit: str | None = field(default_factory=lambda: shutil.which("prlimit"))
    trees: list[_Tree] = field(default_factory=list)

    @property
    def level(self) -> str:
        return self.info.level

    def refusal(self) -> str | None:
        """Why code execution is refused (the level is below ``sandbox.minLevel``), or None."""
        minimum = self.settings.min_level
        if level_rank(self.info.level) >= level_rank(minimum):
            return None
        return (
            f"Code execution is refused: this machine offers isolation level "
            f"'{self.info.level}', below the configured minimum '{minimum}' (sandbox.minLevel). "
            f"{self.info.reason} Run `gatehouse doctor` for details."
        )

    def prepare(
        self,
        argv: tuple[str, ...],
        *,
        cwd: Path,
        scratch: Path | None,
        bypass: bool,
        env_extra: Mapping[str, str] | None = None,
    ) -> tuple[Launch, SandboxInfo]:
        """The launch for ``argv`` and the isolation it really gets."""
        if bypass:
            env = scrub_environment(extra=env_extra)
            return Launch(argv, env, cwd), UNSANDBOXED
        level = self.info.level
        extra = dict(env_extra or {})
        if scratch is not None:
            # Inside the strong tier the session's scratch folder is mounted at /tmp.
            extra["TMPDIR"] = "/tmp" if level == "strong" else str(scratch)  # noqa: S108
        env = scrub_environment(extra=extra)
        if level == "none":
            return Launch(argv, env, cwd), self.info
        group = CommandGroup(self.trees, self.settings.limits.processes) if self.trees else None
        nproc = _nproc_limit(
            self.settings.limits, cgroup_limits=bool(group and group.limits_processes)
        )
        chain: list[str] = []
        if group is not None:
            chain += ["/bin/sh", "-c", _GATE_SCRIPT, "gatehouse-gate"]
        if level == "standard":
            chain += launcher_args(self._standard_config(cwd, scratch, nproc))
        elif self.prlimit:
            chain += prlimit_args(self.prlimit, self.settings.limits, nproc)
        else:
            chain += launcher_args({"rlimits": rlimit_config(self.settings.limits, nproc)})
        if level == "strong":
            assert self.bwrap is not None and scratch is not None
            chain += bwrap_argv(
                self.bwrap,
                workspace=cwd,
                scratch=scratch,
                network=self.settings.network,
                reexpose=reexposed_paths(env),
            )
        return Launch((*chain, *argv), env, cwd, group), self.info

    def _standard_config(
        self, cwd: Path, scratch: Path | None, nproc: int | None
    ) -> dict[str, Any]:
        writable = [str(cwd)] + ([str(scratch)] if scratch is not None else [])
        return {
            "rlimits": rlimit_config(self.settings.limits, nproc),
            "landlock": {
                "writable": writable,
                "hidden": list(HIDDEN_ROOTS),
                "readable_extra": reexposed_paths(scrub_environment()),
                "block_tcp": None,  # best effort (Landlock ABI >= 4); seccomp blocks sockets anyway
            },
            "seccomp": {"block_network": not self.settings.network},
            "drop_caps": True,
            "no_new_privs": True,
        }


def unsandboxed() -> Sandbox:
    """A sandbox that only scrubs the environment (tests, and machines with nothing better)."""
    return Sandbox(
        SandboxInfo("none", True, "No isolation mechanism is available on this machine.")
    )
