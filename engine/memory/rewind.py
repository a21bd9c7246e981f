"""Writing a checkpoint back into the workspace, from the server (outside the box).

The workspace is hostile (approved code wrote it), and these writes are the server's own, so
nothing here is opened by a path the kernel resolves: every folder is opened relative to its
parent's descriptor with ``O_NOFOLLOW``, and a path that goes through a symbolic link (or meets
a file where a folder should be) is **not written**, with the reason, whatever ``force`` says.
A file is written to a new temporary file in its folder, fsynced and renamed over the old one
(a symbolic link at that name is replaced, never followed); a checkpoint's symbolic link is
recreated as a link. Right before each write the path is checked again against what the plan
expected to find there: a path that changed meanwhile is left alone (unless ``force``).
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from dataclasses import dataclass, field
from pathlib import Path

from engine.memory.checkpoints import Step
from engine.memory.shadow import Entry, ShadowRepo, blob_id
from sandbox.dirfd import new_file

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass
class Applied:
    restored: list[tuple[str, str]] = field(default_factory=list)
    """(path, action): ``restored`` (written back), ``deleted`` (the turn created it)."""
    skipped: list[tuple[str, str]] = field(default_factory=list)
    """(path, why not written)."""


class _Refused(Exception):
    pass


def _open_parent(root_fd: int, parts: list[str], *, create: bool) -> int:
    """The descriptor of the folder ``parts`` (below the root), never through a link."""
    fd = os.dup(root_fd)
    try:
        for part in parts:
            try:
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise _Refused("its folder no longer exists") from None
                os.mkdir(part, 0o755, dir_fd=fd)
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise _Refused(
                        f"{part!r} on its way is a symbolic link or a file: not written "
                        "(rewind never writes through a link)"
                    ) from None
                raise
            os.close(fd)
            fd = child
        return fd
    except BaseException:
        os.close(fd)
        raise


def _current(dir_fd: int, name: str) -> Entry | str | None:
    """What ``name`` holds now, as a checkpoint entry; a string when it is something else."""
    try:
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(info.st_mode):
        target = os.readlink(name, dir_fd=dir_fd)
        return ("120000", blob_id(os.fsencode(target)))
    if stat.S_ISDIR(info.st_mode):
        return "a folder"
    if not stat.S_ISREG(info.st_mode):
        return "a special file"
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=dir_fd)
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
    finally:
        os.close(fd)
    mode = "100755" if info.st_mode & stat.S_IXUSR else "100644"
    return (mode, blob_id(b"".join(chunks)))


def _same(found: Entry | str | None, expected: Entry | None) -> bool:
    if isinstance(found, str) or found is None or expected is None:
        return found == expected
    links = "120000" in (found[0], expected[0])
    return found[1] == expected[1] and (found[0] == expected[0] or not links)


def _write(dir_fd: int, name: str, entry: Entry, data: bytes) -> None:
    tmp = f".gatehouse-rewind-{secrets.token_hex(6)}"
    if entry[0] == "120000":
        os.symlink(os.fsdecode(data), tmp, dir_fd=dir_fd)
    else:
        fd = new_file(dir_fd, tmp, data)
        try:
            umask = os.umask(0)
            os.umask(umask)
            os.fchmod(fd, (0o777 if entry[0] == "100755" else 0o666) & ~umask)
            os.fsync(fd)
        except BaseException:
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dir_fd)
            raise
        os.close(fd)
    try:
        os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise


def apply_steps(repo: ShadowRepo, workspace: Path, steps: list[Step], *, force: bool) -> Applied:
    """Write ``steps`` back (blocking). Every path is handled on its own: one that cannot be
    written is reported in ``skipped`` and the others still are."""
    applied = Applied()
    contents = repo.blobs(s.target[1] for s in steps if s.target is not None)
    root_fd = os.open(os.path.realpath(workspace), _DIR_FLAGS)
    emptied: set[tuple[str, ...]] = set()
    try:
        for step in steps:
            parts = step.path.split("/")
            try:
                if any(p in ("", ".", "..") for p in parts):
                    raise _Refused("not a plain relative path")
                dir_fd = _open_parent(root_fd, parts[:-1], create=step.target is not None)
            except _Refused as why:
                applied.skipped.append((step.path, str(why)))
                continue
            except OSError as exc:
                applied.skipped.append((step.path, f"its folder cannot be opened: {exc.strerror}"))
                continue
            try:
                applied_action = _apply_one(dir_fd, parts[-1], step, contents, force)
            except _Refused as why:
                applied.skipped.append((step.path, str(why)))
                continue
            except OSError as exc:
                applied.skipped.append((step.path, f"could not be written: {exc.strerror}"))
                continue
            finally:
                os.close(dir_fd)
            applied.restored.append((step.path, applied_action))
            if applied_action == "deleted":
                emptied.add(tuple(parts[:-1]))
        _remove_empty_folders(root_fd, emptied, repo_dirs=_folders(steps))
    finally:
        os.close(root_fd)
    return applied


def _apply_one(dir_fd: int, name: str, step: Step, contents: dict[str, bytes], force: bool) -> str:
    found = _current(dir_fd, name)
    if isinstance(found, str) and (step.target is not None or not force):
        raise _Refused(f"it is {found} now: not written")
    if not force and not _same(found, step.expected):
        raise _Refused("it changed while the rewind was prepared: left as it is")
    if step.target is None:
        if found is not None:
            os.unlink(name, dir_fd=dir_fd)
        return "deleted"
    data = contents.get(step.target[1])
    if data is None:
        raise _Refused("its content is missing from the checkpoint repository")
    _write(dir_fd, name, step.target, data)
    return "restored"


def _folders(steps: list[Step]) -> set[tuple[str, ...]]:
    """Folders that hold a file written back (never removed)."""
    kept: set[tuple[str, ...]] = set()
    for step in steps:
        if step.target is not None:
            parts = tuple(step.path.split("/")[:-1])
            kept |= {parts[:i] for i in range(1, len(parts) + 1)}
    return kept


def _remove_empty_folders(
    root_fd: int, emptied: set[tuple[str, ...]], repo_dirs: set[tuple[str, ...]]
) -> None:
    """Remove folders left empty by deleting files the rewound turns created."""
    candidates = {parts[:i] for parts in emptied for i in range(1, len(parts) + 1)}
    for parts in sorted(candidates, key=len, reverse=True):
        if parts in repo_dirs:
            continue
        try:
            parent = _open_parent(root_fd, list(parts[:-1]), create=False)
        except (_Refused, OSError):
            continue
        try:
            os.rmdir(parts[-1], dir_fd=parent)
        except OSError:
            pass  # not empty (the user's files, or files not captured): kept
        finally:
            os.close(parent)
