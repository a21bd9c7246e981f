"""The workspace opened by descriptor: paths resolved one component at a time, race-free.

Checking a path and then opening it by name leaves a window: approved code running in another
session can rename a folder and plant a symbolic link in its place between the two, and the
open follows the link out of the workspace (``~/.ssh``). Here nothing is ever opened by a path
the kernel resolves: every component is opened relative to its parent's descriptor with
``O_NOFOLLOW``. A symbolic link met on the way is read and resolved here, in user space, and
only when its target stays inside the workspace (an absolute target inside it included), with
at most :data:`MAX_LINK_HOPS` links per path. Whatever is swapped in meanwhile, what is opened is
a descendant of the workspace folder.

:class:`WorkspaceFS` is the API: :meth:`~WorkspaceFS.open_file` and
:meth:`~WorkspaceFS.open_dir` for reading, :meth:`~WorkspaceFS.open_parent` (the parent folder's
descriptor and the final name, for writes: a temporary file in that folder, ``fsync``, then
``os.rename(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)``), and :func:`walk_files` for trees.
Refusals are :class:`~engine.tools.base.ToolError` with the messages the model sees.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from types import TracebackType

from engine.tools.base import ToolError

MAX_LINK_HOPS = 40
"""As the kernel: more symbolic links than this in one path is a loop."""
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
FILE_FLAGS = (
    os.O_RDONLY
    | os.O_NOFOLLOW
    | os.O_CLOEXEC
    | getattr(os, "O_NONBLOCK", 0)  # opening a FIFO must not hang; harmless for regular files
    | getattr(os, "O_BINARY", 0)
)


@dataclass(frozen=True)
class Opened:
    """A descriptor and the canonical path of what it is, relative to the workspace."""

    fd: int
    parts: tuple[str, ...]

    @property
    def relative(self) -> str:
        return "/".join(self.parts) or "."


class WorkspaceFS:
    """One workspace, opened for the duration of a ``with`` block."""

    def __init__(self, workspace: Path) -> None:
        try:
            root = workspace.resolve(strict=True)
        except (OSError, RuntimeError) as exc:
            raise ToolError(f"The workspace {str(workspace)!r} is not accessible: {exc}") from None
        if not root.is_dir():
            raise ToolError(f"The workspace {str(workspace)!r} is not a directory.")
        self.root = root
        self._prefixes = {str(root), os.path.abspath(workspace)}
        self._fd = -1

    def __enter__(self) -> WorkspaceFS:
        try:
            self._fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as exc:
            raise ToolError(f"The workspace {str(self.root)!r} is not accessible: {exc}") from None
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    # --- resolution ---------------------------------------------------------------------------

    def _below_root(self, absolute: str) -> list[str] | None:
        """The parts of an absolute path written under the workspace (None when elsewhere)."""
        for prefix in self._prefixes:
            if absolute == prefix:
                return []
            if absolute.startswith(prefix.rstrip("/") + "/"):
                return absolute[len(prefix.rstrip("/")) + 1 :].split("/")
        return None

    def _outside(self, path: str, *, via_link: bool) -> ToolError:
        if via_link:
            return ToolError(
                f"Access denied: {path!r} goes through a symbolic link that points outside the "
                f"workspace. Only files inside the workspace ({self.root}) can be used."
            )
        return ToolError(
            f"Access denied: {path!r} is outside the workspace. Use a path relative to the "
            f"workspace root ({self.root})."
        )

    def _reopen(self, parts: list[str]) -> int:
        fd = os.dup(self._fd)
        for part in parts:
            try:
                child = os.open(part, DIR_FLAGS, dir_fd=fd)
            finally:
                os.close(fd)
            fd = child
        return fd

    def _resolve(
        self, path: str | None, *, follow_last: bool, must_exist: bool
    ) -> tuple[int, list[str], str | None]:
        """``(descriptor of the folder reached, its parts, final name or None)``. The final
        name, when returned, is not a symbolic link (with ``follow_last``) or not yet checked."""
        if path is None or not path.strip() or path == ".":
            return os.dup(self._fd), [], None
        if "\x00" in path:
            raise ToolError("Invalid path: it contains a NUL byte.")
        if os.path.isabs(path):
            below = self._below_root(os.path.normpath(path))
            if below is None:
                raise self._outside(path, via_link=False)
            written = below
        else:
            written = path.split("/")
        pending: list[tuple[str, bool]] = [(p, False) for p in reversed(written) if p]
        current: list[str] = []
        fd = os.dup(self._fd)
        hops = 0
        try:
            while pending:
                name, from_link = pending.pop()
                if name == ".":
                    continue
                if name == "..":
                    if not current:
                        raise self._outside(path, via_link=from_link)
                    current.pop()
                    os.close(fd)
                    fd = -1
                    try:
                        fd = self._reopen(current)
                    except OSError as exc:
                        raise _changed(path, exc) from None
                    continue
                last = not any(p not in ("", ".") for p, _ in pending)
                if last and not follow_last:
                    return fd, current, name
                try:
                    info = os.stat(name, dir_fd=fd, follow_symlinks=False)
                except FileNotFoundError:
                    rest = [p for p, _ in reversed(pending) if p not in ("", ".")]
                    if must_exist or ".." in rest:
                        raise ToolError(f"No such file or directory: {path}") from None
                    if not rest:
                        return fd, current, name
                    return fd, [*current, name, *rest[:-1]], rest[-1]
                except OSError as exc:
                    raise _changed(path, exc) from None
                if stat.S_ISLNK(info.st_mode):
                    hops += 1
                    if hops > MAX_LINK_HOPS:
                        raise ToolError(f"Too many levels of symbolic links in {path!r}.")
                    try:
                        target = os.readlink(name, dir_fd=fd)
                    except OSError as exc:
                        raise _changed(path, exc) from None
                    if os.path.isabs(target):
                        below = self._below_root(target)
                        if below is None:
                            raise self._outside(path, via_link=True)
                        current = []
                        os.close(fd)
                        fd = -1
                        fd = os.dup(self._fd)
                        target_parts = below
                    else:
                        target_parts = target.split("/")
                    pending += [(p, True) for p in reversed(target_parts) if p]
                    continue
                if last:
                    return fd, current, name
                if not stat.S_ISDIR(info.st_mode):
                    raise ToolError(f"No such file or directory: {path}")
                try:
                    child = os.open(name, DIR_FLAGS, dir_fd=fd)
                except OSError as exc:
                    raise _changed(path, exc) from None
                os.close(fd)
                fd = child
                current.append(name)
            return fd, current, None
        except BaseException:
            if fd >= 0:
                os.close(fd)
            raise

    # --- the API ------------------------------------------------------------------------------

    def resolve(self, path: str | None, *, must_exist: bool = True) -> tuple[str, ...]:
        """The canonical parts of ``path`` (every symbolic link resolved inside the workspace)."""
        fd, parts, name = self._resolve(path, follow_last=True, must_exist=must_exist)
        os.close(fd)
        return (*parts, name) if name is not None else tuple(parts)

    def open_dir(self, path: str | None) -> Opened:
        """A folder of the workspace, for listing (the caller closes ``fd``)."""
        fd, parts, name = self._resolve(path, follow_last=True, must_exist=True)
        if name is None:
            return Opened(fd, tuple(parts))
        try:
            child = os.open(name, DIR_FLAGS, dir_fd=fd)
        except OSError as exc:
            if exc.errno == errno.ENOTDIR:
                shown = "/".join((*parts, name))
                raise ToolError(
                    f"{shown} is a file, not a directory. Use read_file to read it."
                ) from None
            raise _changed(path or ".", exc) from None
        finally:
            os.close(fd)
        return Opened(child, (*parts, name))

    def open_file(self, path: str | None) -> tuple[Opened, os.stat_result]:
        """A regular file of the workspace, for reading (the caller closes ``fd``)."""
        fd, parts, name = self._resolve(path, follow_last=True, must_exist=True)
        if name is None:
            os.close(fd)
            shown = "/".join(parts) or "."
            raise ToolError(
                f"{shown} is a directory, not a file. Use list_files to see what it contains."
            )
        try:
            opened = open_child_file(fd, name, "/".join((*parts, name)))
        finally:
            os.close(fd)
        return opened, os.fstat(opened.fd)

    def open_entry(self, path: str | None) -> tuple[Opened, bool]:
        """A folder (``True``) or a regular file (``False``) of the workspace."""
        fd, parts, name = self._resolve(path, follow_last=True, must_exist=True)
        if name is None:
            return Opened(fd, tuple(parts)), True
        shown = "/".join((*parts, name))
        try:
            try:
                return Opened(os.open(name, DIR_FLAGS, dir_fd=fd), (*parts, name)), True
            except NotADirectoryError:
                return open_child_file(fd, name, shown), False
            except OSError as exc:
                raise _changed(shown, exc) from None
        finally:
            os.close(fd)

    def open_parent(self, path: str) -> tuple[Opened, str]:
        """The folder that holds (or will hold) ``path``, and the final name: for writing."""
        fd, parts, name = self._resolve(path, follow_last=False, must_exist=True)
        if name is None:
            os.close(fd)
            raise ToolError(f"{path!r} names a directory, not a file.")
        return Opened(fd, tuple(parts)), name

    def make_parent(self, parts: tuple[str, ...]) -> tuple[Opened, tuple[str, ...]]:
        """The folder that holds the canonical path ``parts`` (as :meth:`resolve` gives it),
        with the folders that are missing created one by one by descriptor; and those created
        (relative, outermost first), so that a failed write can remove them again. A folder on
        the way that now resolves elsewhere (a link swapped in) is refused."""
        folders = parts[:-1]
        existing = len(folders)
        opened: Opened | None = None
        while existing > 0:
            try:
                opened = self.open_dir("/".join(folders[:existing]))
            except ToolError:
                # Missing: create it. Anything else (a link leading outside) is said as it is.
                self.resolve("/".join(folders[:existing]), must_exist=False)
                existing -= 1
                continue
            if opened.parts != folders[:existing]:
                os.close(opened.fd)
                shown = "/".join(parts)
                raise ToolError(f"{shown!r} changed while it was being written; try again.")
            break
        fd = opened.fd if opened is not None else os.dup(self._fd)
        created: list[str] = []
        try:
            for depth in range(existing, len(folders)):
                name = folders[depth]
                os.mkdir(name, 0o777, dir_fd=fd)
                created.append("/".join(folders[: depth + 1]))
                child = os.open(name, DIR_FLAGS, dir_fd=fd)
                os.close(fd)
                fd = child
        except OSError as exc:
            os.close(fd)
            self.remove_folders(created)
            shown = "/".join(folders[: len(created) + existing + 1])
            raise ToolError(f"Cannot create the folder {shown}: {exc.strerror or exc}") from None
        return Opened(fd, folders), tuple(created)

    def remove_folders(self, created: list[str] | tuple[str, ...]) -> None:
        """Remove folders :meth:`make_parent` created (innermost first), when they are empty."""
        for relative in reversed(created):
            try:
                os.rmdir(relative, dir_fd=self._fd)
            except OSError:
                return


def _changed(path: str, exc: OSError) -> ToolError:
    if exc.errno in (errno.ELOOP, errno.ENOENT, errno.ENOTDIR):
        return ToolError(f"{path!r} changed while it was being opened; try again.")
    return ToolError(f"Cannot open {path}: {exc.strerror or exc}")


def open_child_file(dir_fd: int, name: str, shown: str) -> Opened:
    """``name`` in the folder ``dir_fd``: a regular file, never through a symbolic link."""
    try:
        fd = os.open(name, FILE_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ToolError(f"{shown} is a symbolic link; it was not followed.") from None
        raise ToolError(f"Cannot open {shown}: {exc.strerror or exc}") from None
    mode = os.fstat(fd).st_mode
    if stat.S_ISDIR(mode):
        os.close(fd)
        raise ToolError(
            f"{shown} is a directory, not a file. Use list_files to see what it contains."
        )
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise ToolError(f"{shown} is not a regular file, so it cannot be read.")
    return Opened(fd, tuple(shown.split("/")))


def walk_files(top: Opened, skipped: frozenset[str]) -> Iterator[tuple[int, str, str]]:
    """Regular files below ``top`` as ``(folder descriptor, name, shown path)``: sorted, each
    folder's files before its subfolders, never through a symbolic link, never into ``skipped``.
    The descriptor is valid until the next item is asked for; ``top.fd`` is not closed."""
    prefix = "" if not top.parts else top.relative + "/"
    stack: list[tuple[int, str, Iterator[str]]] = []
    fd = top.fd
    own = False
    while True:
        subdirs: list[str] = []
        try:
            entries = sorted(os.scandir(fd), key=lambda e: e.name)
        except OSError:
            entries = []
        for entry in entries:
            if entry.name in skipped:
                continue
            try:
                if entry.is_dir(follow_symlinks=False):
                    subdirs.append(entry.name)
                elif entry.is_file(follow_symlinks=False):
                    yield fd, entry.name, prefix + entry.name
            except OSError:
                continue
        stack.append((fd if own else -1, prefix, iter(subdirs)))
        fd, prefix, own = _next_dir(stack, top.fd)
        if fd < 0:
            return


def _next_dir(stack: list[tuple[int, str, Iterator[str]]], top: int) -> tuple[int, str, bool]:
    """Open the next subfolder to walk (depth first), closing finished ones."""
    while stack:
        fd, prefix, names = stack[-1]
        name = next(names, None)
        if name is None:
            stack.pop()
            if fd >= 0:
                os.close(fd)
            continue
        try:
            child = os.open(name, DIR_FLAGS, dir_fd=fd if fd >= 0 else top)
        except OSError:  # gone, or swapped for a symbolic link: not followed
            continue
        return child, f"{prefix}{name}/", True
    return -1, "", False


def display(parts: tuple[str, ...]) -> str:
    return PurePosixPath(*parts).as_posix() if parts else "."
