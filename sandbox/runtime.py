"""What the server itself executes or imports outside the sandbox, and how it finds programs.

The rule: **nothing the server executes or imports outside the sandbox may be writable from
inside it.** That covers bwrap, ``prlimit``, ``/bin/sh``, the standard tier's launcher, the
interpreter (its real path and the base installation), the virtual environment, Gatehouse's own
packages and every ``sys.path`` entry, wherever they live. :func:`runtime_paths` lists them; the
strong tier mounts those inside the workspace read-only over it, the standard tier (which cannot)
refuses to run code while one lies inside the workspace.

Programs the server starts are looked up once, at start-up, by :func:`find_program`, which skips
relative ``PATH`` entries and entries inside the workspace (an activated ``.venv/bin`` there could
hold a planted ``bwrap``). bwrap is then copied into the server's private folder
(:func:`private_copy`) and that copy is what runs, so replacing the original later changes
nothing until the next start, when it is checked again.
"""

from __future__ import annotations

import logging
import os
import stat
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

logger = logging.getLogger(__name__)

_PACKAGE_ROOT = Path(__file__).resolve().parent.parent
_OWN_PACKAGES = ("server", "engine", "sandbox")


def base_interpreter() -> str:
    """The base interpreter's real path (a virtual environment plays no part in starting it)."""
    return os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable)


def runtime_paths(extra: Iterable[str] = ()) -> list[str]:
    """Absolute real paths of what the server runs or imports (folders and files)."""
    wanted = [
        sys.prefix,
        sys.base_prefix,
        os.path.realpath(sys.executable),
        os.path.dirname(os.path.realpath(sys.executable)),
        base_interpreter(),
        os.path.dirname(base_interpreter()),
        "/bin/sh",
        *(str(_PACKAGE_ROOT / name) for name in _OWN_PACKAGES),
        *(p for p in sys.path if p and os.path.isabs(p)),
        *extra,
    ]
    found: list[str] = []
    for path in wanted:  # a link is represented by where it points (a link cannot be mounted)
        for candidate in (os.path.normpath(path), os.path.realpath(path)):
            usable = os.path.exists(candidate) and not os.path.islink(candidate)
            if usable and candidate not in found:
                found.append(candidate)
    return found


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def inside_workspace(paths: Iterable[str], workspace: Path, *, strict: bool = False) -> list[str]:
    """The paths that lie in the workspace (or, unless ``strict``, are it), outermost first."""
    roots = {os.path.realpath(workspace), os.path.abspath(workspace)}
    found = {p for p in paths if any(_within(p, r) and not (strict and p == r) for r in roots)}
    return sorted(found, key=lambda p: (p.count("/"), p))


def covering_workspace(paths: Iterable[str], workspace: Path) -> list[str]:
    """The paths that are the workspace itself: they cannot be mounted read-only over it."""
    roots = {os.path.realpath(workspace), os.path.abspath(workspace)}
    return [p for p in paths if p in roots]


def drop_workspace_imports(workspace: Path) -> list[str]:
    """Remove ``sys.path`` entries that are the workspace (or relative: the current folder) so
    no module the server imports later can come from a file approved code wrote there.

    Gatehouse's own modules still load: a package's submodules are found through the package's
    ``__path__``, not ``sys.path``. Returns what was removed."""
    roots = {os.path.realpath(workspace), os.path.abspath(workspace)}
    removed = [p for p in sys.path if not os.path.isabs(p) or os.path.realpath(p) in roots]
    sys.path[:] = [p for p in sys.path if p not in removed]
    if removed:
        logger.info("removed %s from sys.path (the workspace)", removed)
    return removed


def find_program(
    name: str, workspace: Path | None, env: Mapping[str, str] | None = None
) -> str | None:
    """``name`` on ``PATH``, skipping relative entries and entries inside ``workspace``."""
    path = (os.environ if env is None else env).get("PATH", os.defpath)
    for entry in path.split(os.pathsep):
        if not entry or not os.path.isabs(entry):
            continue
        if workspace is not None and inside_workspace([os.path.realpath(entry)], workspace):
            logger.warning("not looking for %s in %s: it is inside the workspace", name, entry)
            continue
        candidate = os.path.join(entry, name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


class UntrustedProgram(Exception):
    """A program that must not be run (writable by others, not a regular file, ...)."""


def verify_program(path: str) -> os.stat_result:
    """Refuse a program others could have replaced: it must be a regular executable file owned
    by root or by us, writable by neither group nor others."""
    info = os.stat(path)
    if not stat.S_ISREG(info.st_mode):
        raise UntrustedProgram(f"{path} is not a regular file")
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise UntrustedProgram(f"{path} is writable by other users")
    uid = os.getuid() if hasattr(os, "getuid") else 0
    if info.st_uid not in (0, uid):
        raise UntrustedProgram(f"{path} belongs to another user (uid {info.st_uid})")
    if not info.st_mode & stat.S_IXUSR:
        raise UntrustedProgram(f"{path} is not executable")
    return info


def private_copy(base: str, files: Iterable[str], folder: Path) -> Path:
    """Copy ``files`` (relative to ``base``, each verified by :func:`verify_program`) into
    ``folder`` (created 0700; files 0500), keeping their relative layout so a binary finds its
    bundled libraries through ``$ORIGIN``. Each is read through one descriptor, so the copy is
    what was verified."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=False)
    for rel in files:
        source = os.path.join(base, rel)
        verify_program(source)
        target = folder / rel
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        src = os.open(source, os.O_RDONLY | os.O_CLOEXEC)
        try:
            info = os.fstat(src)
            if not stat.S_ISREG(info.st_mode) or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
                raise UntrustedProgram(f"{source} changed while it was being copied")
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            dst = os.open(target, flags, 0o700)
            try:
                while chunk := os.read(src, 1 << 20):
                    os.write(dst, chunk)
                os.fchmod(dst, 0o500)
            finally:
                os.close(dst)
        finally:
            os.close(src)
    return folder
