"""The configured sandbox: how a command is launched at the level this machine supports.

Every level starts the command with a from-scratch environment. Above ``none`` the chain is::

    setpriv --pdeathsig KILL (the command dies with the server: :mod:`sandbox.lifeline`)
      -> sh (checks its parent is the server; reads one line: sent once the server has put it
             in the command's cgroups; at the strong level it starts a watcher that kills the
             process group when the chain's first process dies)
      -> prlimit (resource limits)        | or the Python launcher (limits, Landlock, seccomp)
        -> bwrap (strong tier only)
          -> the handshake (strong tier, run by the runner: :data:`sandbox.lifeline.HANDSHAKE`)
            -> the command

so limits and confinement are applied by ``exec`` before the command starts, never by a
``preexec_fn`` in the server. The ``sh`` gate costs about a millisecond and exists only when
cgroups are in use. A POSIX shell's ``read`` takes a pipe byte by byte, so whatever the server
writes after that line (the ``python`` tool's code) is the command's stdin.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sandbox.bwrap import ReadOnly, bwrap_argv, reexposed_paths
from sandbox.cgroups import CommandGroup, _Tree
from sandbox.environment import scrub_environment
from sandbox.info import UNSANDBOXED, SandboxInfo
from sandbox.lifeline import handshake_args, lifeline_args

if TYPE_CHECKING:
    from sandbox.guard import WorkspaceGuard
from sandbox.paths import HIDDEN_ROOTS
from sandbox.policy import Limits, SandboxSettings, level_rank
from sandbox.quarantine import DIR_FLAGS, open_dir
from sandbox.runtime import (
    base_interpreter,
    covering_workspace,
    find_program,
    inside_workspace,
    runtime_paths,
)

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
    pass_fds: tuple[int, ...] = ()
    """Descriptors the first process inherits (bwrap's ``--ro-bind-fd`` sources)."""
    handshake: bool = False
    """The command waits inside the sandbox until the server answers the handshake
    (:mod:`sandbox.lifeline`): the runner must provide its descriptors."""


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
    return [
        base_interpreter(),
        "-S",
        "-I",
        LAUNCHER,
        json.dumps(config, separators=(",", ":")),
        "--",
    ]


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
    """The private copy of bwrap that runs (see :func:`sandbox.runtime.private_copy`)."""
    bwrap_source: str | None = None
    """Where that copy came from."""
    fd_binds: bool = False
    """bwrap has ``--ro-bind-fd``: protected paths are mounted from descriptors."""
    prlimit: str | None = field(default_factory=lambda: find_program("prlimit", None))
    setpriv: str | None = field(default_factory=lambda: find_program("setpriv", None))
    """util-linux ``setpriv``: ties each command's life to the server's (None: not installed)."""
    trees: list[_Tree] = field(default_factory=list)
    quarantine_root: Path | None = None
    """Where changed auto-run paths go (None: :func:`sandbox.quarantine.default_root`)."""
    _guards: dict[str, WorkspaceGuard] = field(default_factory=dict, repr=False)
    _runtime: list[str] | None = field(default=None, repr=False)
    _identity: dict[str, tuple[int, int]] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def level(self) -> str:
        return self.info.level

    @property
    def confines(self) -> bool:
        """Whether files are confined (strong, standard): the auto-run paths are then guarded."""
        return self.info.level in ("strong", "standard")

    def runtime(self) -> list[str]:
        """What the server runs or imports outside the sandbox (see :mod:`sandbox.runtime`)."""
        if self._runtime is None:
            programs = (self.bwrap, self.bwrap_source, self.prlimit, self.setpriv)
            extra = [LAUNCHER, *(p for p in programs if p)]
            self._runtime = runtime_paths(extra)
            for path in self._runtime:  # what each one is now: checked before every mount
                with contextlib.suppress(OSError):
                    info = os.stat(path, follow_symlinks=False)
                    self._identity[path] = (info.st_dev, info.st_ino)
        return self._runtime

    def refusal(self, workspace: Path | None = None) -> str | None:
        """Why code execution is refused (the level is below ``sandbox.minLevel``, or the
        server's own code is writable in ``workspace`` at this level), or None."""
        minimum = self.settings.min_level
        if level_rank(self.info.level) < level_rank(minimum):
            return (
                f"Code execution is refused: this machine offers isolation level "
                f"'{self.info.level}', below the configured minimum '{minimum}' "
                f"(sandbox.minLevel). {self.info.reason} Run `gatehouse doctor` for details."
            )
        if workspace is None:
            return None
        return self.runtime_refusal(workspace)

    def runtime_refusal(self, workspace: Path) -> str | None:
        """Why code must not run in ``workspace``: the server's own runtime is writable there."""
        if not self.confines:
            return None
        runtime = self.runtime()
        exposed = covering_workspace(runtime, workspace)
        if self.info.level == "standard":
            exposed = inside_workspace(runtime, workspace)
        if not exposed:
            return None
        return (
            f"Code execution is refused: {exposed[0]} is part of what the Gatehouse server runs "
            f"(its interpreter, virtual environment, code or helpers) and lies inside the "
            f"workspace {workspace}, where approved code could change it "
            + (
                "(at the standard level Landlock cannot keep part of the workspace read-only)"
                if self.info.level == "standard"
                else "(it is the workspace itself)"
            )
            + ". Install Gatehouse outside the workspace (a virtual environment elsewhere, or "
            "pipx), or open a folder that does not contain it."
        )

    def readonly(self, workspace: Path, roots: Sequence[str]) -> list[ReadOnly]:
        """What the strong tier mounts read-only over ``workspace``: the existing auto-run
        ``roots`` (relative) and the runtime inside it. With ``fd_binds`` each is opened here,
        one component at a time without following links; a runtime path that is no longer the
        file or folder it was at start-up raises :class:`RuntimeChanged`. The caller closes
        the descriptors (:func:`close_readonly`)."""
        ws = os.path.realpath(workspace)
        runtime = inside_workspace(self.runtime(), workspace, strict=True)
        outermost = [p for p in runtime if not any(p.startswith(o + "/") for o in runtime)]
        wanted = [(f"{ws}/{rel}", False) for rel in roots]
        wanted += [(p, True) for p in outermost if p.startswith(ws + "/")]
        if not self.fd_binds:
            return [(path, None) for path, _ in wanted]
        result: list[ReadOnly] = []
        try:
            root = os.open(ws, DIR_FLAGS)
            try:
                for path, is_runtime in wanted:
                    fd = _open_path(root, tuple(path[len(ws) + 1 :].split("/")))
                    if fd is None:
                        if is_runtime:
                            raise RuntimeChanged(path)
                        continue
                    result.append((path, fd))
                    info = os.fstat(fd)
                    if is_runtime and self._identity.get(path) != (info.st_dev, info.st_ino):
                        raise RuntimeChanged(path)
            finally:
                os.close(root)
        except BaseException:
            close_readonly(result)
            raise
        return result

    def guard(self, workspace: Path) -> WorkspaceGuard | None:
        """The guard of ``workspace``'s auto-run paths (None below the standard level)."""
        if not self.confines:
            return None
        key = os.path.realpath(workspace)
        with self._lock:
            guard = self._guards.get(key)
            if guard is None:
                from sandbox.guard import WorkspaceGuard  # noqa: PLC0415 - with the first command

                guard = self._guards[key] = WorkspaceGuard(workspace, self.quarantine_root)
        return guard

    def prepare(
        self,
        argv: tuple[str, ...],
        *,
        cwd: Path,
        scratch: Path | None,
        bypass: bool,
        env_extra: Mapping[str, str] | None = None,
        protected: Sequence[ReadOnly] | None = None,
        handshake: bool = False,
    ) -> tuple[Launch, SandboxInfo]:
        """The launch for ``argv`` and the isolation it really gets. ``protected``: what the
        strong tier keeps read-only (default: the server's runtime inside ``cwd``, by path).
        ``handshake``: at the strong level, the command first waits inside the sandbox for the
        server's answer (:data:`sandbox.lifeline.HANDSHAKE`; the runner's launches)."""
        if bypass:
            # No sandbox and no process limit, but still a cgroup where one can be made: the
            # whole tree (setsid children too) dies with the call, on cancel and at exit.
            env = scrub_environment(extra=env_extra)
            bypass_group = CommandGroup(self.trees, None) if self.trees else None
            # The lifeline too: a server killed with SIGKILL leaves no bypassed command behind.
            head = lifeline_args(self.setpriv, _GATE_SCRIPT if bypass_group else 'exec "$@"')
            if not head and bypass_group:
                head = ["/bin/sh", "-c", _GATE_SCRIPT, "gatehouse-gate"]
            return Launch((*head, *argv), env, cwd, bypass_group), UNSANDBOXED
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
        script = _GATE_SCRIPT if group is not None else 'exec "$@"'
        chain += lifeline_args(self.setpriv, script, watch=level == "strong")
        if group is not None and not chain:
            chain += ["/bin/sh", "-c", _GATE_SCRIPT, "gatehouse-gate"]
        if level == "standard":
            chain += launcher_args(self._standard_config(cwd, scratch, nproc))
        elif self.prlimit:
            chain += prlimit_args(self.prlimit, self.settings.limits, nproc)
        else:
            chain += launcher_args({"rlimits": rlimit_config(self.settings.limits, nproc)})
        fds: tuple[int, ...] = ()
        if level == "strong":
            assert self.bwrap is not None and scratch is not None
            readonly = list(protected) if protected is not None else []
            if protected is None:
                readonly += [(p, None) for p in inside_workspace(self.runtime(), cwd, strict=True)]
            fds = tuple(fd for _path, fd in readonly if fd is not None)
            chain += bwrap_argv(
                self.bwrap,
                workspace=cwd,
                scratch=scratch,
                network=self.settings.network,
                reexpose=reexposed_paths(env),
                readonly=readonly,
            )
            if handshake:
                chain += handshake_args()
        return Launch((*chain, *argv), env, cwd, group, fds, handshake and level == "strong"), (
            self.info
        )

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


class RuntimeChanged(Exception):
    """Part of the server's runtime in the workspace is no longer what it was at start-up."""

    def __init__(self, path: str) -> None:
        super().__init__(
            f"Code execution is refused: {path} (part of what the Gatehouse server runs) is not "
            "the file or folder it was when the server started. Restart the server after "
            "checking it."
        )


def _open_path(root: int, parts: tuple[str, ...]) -> int | None:
    """An ``O_PATH`` descriptor of a folder or regular file below ``root``, reached without
    following a link; None when it is gone or is something else now."""
    try:
        parent = open_dir(root, parts[:-1])
    except OSError:
        return None
    try:
        fd = os.open(parts[-1], os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
    except OSError:
        return None
    finally:
        os.close(parent)
    mode = os.fstat(fd).st_mode
    if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
        os.close(fd)
        return None
    return fd


def close_readonly(readonly: Sequence[ReadOnly]) -> None:
    for _path, fd in readonly:
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)


def unsandboxed() -> Sandbox:
    """A sandbox that only scrubs the environment (tests, and machines with nothing better)."""
    return Sandbox(
        SandboxInfo("none", True, "No isolation mechanism is available on this machine.")
    )
