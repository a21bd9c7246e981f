"""Moving things out of a workspace and putting originals back, by descriptor.

Every operation opens the workspace path one component at a time relative to its parent's
descriptor with ``O_NOFOLLOW``, so a symbolic link planted by approved code (``.git/hooks`` ->
``~/.ssh``) never redirects a move or a write outside the workspace: a path that no longer leads
through real folders is reported as not restorable instead.

Nothing is deleted: what approved code created or changed in an auto-run path is moved to a
quarantine folder outside the workspace (:func:`default_root`), under a per-call folder that
mirrors the workspace path, and can be inspected or moved back by hand.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import secrets
import stat
import time
from pathlib import Path

from sandbox.dirfd import new_file

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_counter = itertools.count(1)


def default_root(workspace: Path, env: dict[str, str] | None = None) -> Path:
    """``$XDG_STATE_HOME/gatehouse/quarantine`` (default ``~/.local/state/gatehouse/quarantine``),
    or ``/var/tmp/gatehouse-quarantine-<uid>`` when that lies in the workspace (a workspace that
    is the home folder): approved code could otherwise swap it for a link to anywhere."""
    env = dict(os.environ) if env is None else env
    home = env.get("HOME") or os.path.expanduser("~")
    state = env.get("XDG_STATE_HOME") or os.path.join(home, ".local", "state")
    root = Path(os.path.realpath(os.path.join(state, "gatehouse", "quarantine")))
    if root.is_relative_to(os.path.realpath(workspace)):
        uid = os.getuid() if hasattr(os, "getuid") else 0
        return Path("/var/tmp", f"gatehouse-quarantine-{uid}")  # noqa: S108 - kept, not temporary
    return root


def open_dir(root_fd: int, parts: tuple[str, ...]) -> int:
    """A descriptor of the folder ``parts`` below ``root_fd``, never through a symbolic link."""
    fd = os.dup(root_fd)
    try:
        for part in parts:
            child = os.open(part, DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def _makedirs(root_fd: int, parts: tuple[str, ...]) -> int:
    """Like :func:`open_dir`, creating missing folders (mode 0700)."""
    fd = os.dup(root_fd)
    try:
        for part in parts:
            with contextlib.suppress(FileExistsError):
                os.mkdir(part, 0o700, dir_fd=fd)
            child = os.open(part, DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def _copy(src_dir: int, name: str, dst_dir: int) -> None:
    """Copy ``name`` (a file, a link or a folder, recursively) without following links."""
    info = os.stat(name, dir_fd=src_dir, follow_symlinks=False)
    if stat.S_ISDIR(info.st_mode):
        os.mkdir(name, 0o700, dir_fd=dst_dir)
        src, dst = (
            os.open(name, DIR_FLAGS, dir_fd=src_dir),
            os.open(name, DIR_FLAGS, dir_fd=dst_dir),
        )
        try:
            for entry in os.scandir(src):
                _copy(src, entry.name, dst)
        finally:
            os.close(src)
            os.close(dst)
    elif stat.S_ISLNK(info.st_mode):
        os.symlink(os.readlink(name, dir_fd=src_dir), name, dir_fd=dst_dir)
    elif stat.S_ISREG(info.st_mode):
        src = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=src_dir)
        try:
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            dst = os.open(name, flags, stat.S_IMODE(info.st_mode) & 0o700, dir_fd=dst_dir)
            try:
                while chunk := os.read(src, 1 << 20):
                    os.write(dst, chunk)
            finally:
                os.close(dst)
        finally:
            os.close(src)


def _remove(dir_fd: int, name: str) -> None:
    """Remove ``name`` below ``dir_fd`` (recursively), never following a link."""
    info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    if stat.S_ISDIR(info.st_mode):
        fd = os.open(name, DIR_FLAGS, dir_fd=dir_fd)
        try:
            for entry in os.scandir(fd):
                _remove(fd, entry.name)
        finally:
            os.close(fd)
        os.rmdir(name, dir_fd=dir_fd)
    else:
        os.unlink(name, dir_fd=dir_fd)


class Quarantine:
    """A per-call folder under ``root`` that receives what is moved out of one workspace."""

    def __init__(self, root: Path) -> None:
        self.root = root
        stamp = time.strftime("%Y%m%d-%H%M%S")
        self.folder = root / f"{stamp}-{os.getpid()}-{next(_counter)}-{secrets.token_hex(3)}"

    def move_out(self, ws_fd: int, rel: str) -> str:
        """Move the workspace path ``rel`` into the quarantine; the absolute path it now has."""
        parts = tuple(rel.split("/"))
        parent = open_dir(ws_fd, parts[:-1])
        try:
            self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
            base = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            try:
                target = _makedirs(base, (self.folder.name, *parts[:-1]))
            finally:
                os.close(base)
            try:
                try:
                    os.rename(parts[-1], parts[-1], src_dir_fd=parent, dst_dir_fd=target)
                except OSError as exc:
                    if exc.errno != errno.EXDEV:
                        raise
                    _copy(parent, parts[-1], target)  # another file system: copy, then remove
                    _remove(parent, parts[-1])
            finally:
                os.close(target)
        finally:
            os.close(parent)
        return str(self.folder / rel)


def write_back(ws_fd: int, rel: str, kind: str, mode: int, data: bytes) -> None:
    """Put an original back at ``rel``: a file (``data``), a link (target ``data``) or a folder.

    Written beside it and renamed over, so a reader never sees half a file."""
    parts = tuple(rel.split("/"))
    parent = open_dir(ws_fd, parts[:-1])
    try:
        if kind == "dir":
            with contextlib.suppress(FileExistsError):
                os.mkdir(parts[-1], mode, dir_fd=parent)
            os.chmod(parts[-1], mode, dir_fd=parent, follow_symlinks=False)
            return
        temp = f".{parts[-1]}.gatehouse-{secrets.token_hex(4)}"
        if kind == "link":
            os.symlink(os.fsdecode(data), temp, dir_fd=parent)
        else:
            fd = new_file(parent, temp, data)
            try:
                os.fchmod(fd, mode)
            finally:
                os.close(fd)
        try:
            os.rename(temp, parts[-1], src_dir_fd=parent, dst_dir_fd=parent)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=parent)
            raise
    finally:
        os.close(parent)
