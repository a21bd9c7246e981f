"""``search_files`` as it was before issue 8 (commit 029f3e9), kept verbatim so that
``search_files.py`` can compare today's implementation with it in the same run.

Not used by Gatehouse: this version checks a path and then opens it by name (the swap race of
finding 3) and matches with :mod:`re`, which cannot be stopped (finding 4).
"""

# ruff: noqa
from __future__ import annotations

import os
import re
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from engine.tools.base import ToolError

MAX_SEARCH_MATCHES = 200
MAX_SEARCH_FILE_BYTES = 2 * 1024 * 1024
MAX_MATCH_LINE_CHARS = 300
BINARY_SNIFF_BYTES = 8 * 1024
SKIPPED_DIRS: frozenset[str] = frozenset(
    {".git", "node_modules", "__pycache__", ".venv", ".mypy_cache", ".ruff_cache", ".pytest_cache"}
)
_OPEN_FLAGS: int = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_BINARY", 0)
)


def workspace_root(workspace: Path) -> Path:
    """The workspace as a real, existing absolute path (symbolic links resolved)."""
    try:
        root = workspace.resolve(strict=True)
    except (OSError, RuntimeError) as exc:
        raise ToolError(f"The workspace {str(workspace)!r} is not accessible: {exc}") from None
    if not root.is_dir():
        raise ToolError(f"The workspace {str(workspace)!r} is not a directory.")
    return root


def resolve_in_workspace(workspace: Path, path: str | None, *, must_exist: bool = True) -> Path:
    """Resolve ``path`` (relative to ``workspace``, or absolute) to a real path inside it.

    ``None``, an empty or whitespace-only path, and ``"."`` mean the workspace itself. Raises
    :class:`ToolError` when the path contains a NUL byte, escapes the workspace (through ``..``,
    an absolute path elsewhere, or a symbolic link whose target is outside), or, with
    ``must_exist``, does not exist. The returned path is absolute with every symbolic link
    resolved, so it can be opened without following links again.
    """
    root = workspace_root(workspace)
    if path is None or not path.strip():
        return root
    if "\x00" in path:
        raise ToolError("Invalid path: it contains a NUL byte.")

    candidate = Path(path)
    if not candidate.is_absolute():
        candidate = root / candidate
    # Lexical normalisation only serves the error message: did the model write a path outside,
    # or did a symbolic link take an inside-looking path outside?
    lexical = Path(os.path.normpath(candidate))
    try:
        real = Path(os.path.realpath(candidate))
    except (OSError, ValueError) as exc:
        raise ToolError(f"Invalid path {path!r}: {exc}") from None

    if not real.is_relative_to(root):
        written_inside = lexical.is_relative_to(root) or lexical.is_relative_to(
            Path(os.path.abspath(workspace))
        )
        if written_inside:
            raise ToolError(
                f"Access denied: {path!r} goes through a symbolic link that points outside the "
                f"workspace. Only files inside the workspace ({root}) can be used."
            )
        raise ToolError(
            f"Access denied: {path!r} is outside the workspace. Use a path relative to the "
            f"workspace root ({root})."
        )
    if must_exist and not os.path.exists(real):
        raise ToolError(f"No such file or directory: {path}")
    return real


def display_path(workspace: Path, path: Path) -> str:
    """``path`` relative to the workspace as a POSIX string (``"."`` for the workspace itself).

    ``path`` may be real (as :func:`resolve_in_workspace` returns it) or written under the
    workspace as given; a path outside the workspace is returned as an absolute POSIX string.
    """
    bases = [Path(os.path.realpath(workspace)), Path(os.path.abspath(workspace))]
    target = Path(os.path.abspath(path))
    for base in bases:
        if target.is_relative_to(base):
            relative = target.relative_to(base)
            return PurePosixPath(*relative.parts).as_posix() if relative.parts else "."
    return target.as_posix()


def _open_regular_file(path: Path, shown: str) -> tuple[int, os.stat_result]:
    """Open ``path`` for reading without following a final symbolic link; refuse non-files."""
    if path.is_dir():
        raise ToolError(
            f"{shown} is a directory, not a file. Use list_files to see what it contains."
        )
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError as exc:
        raise ToolError(f"Cannot open {shown}: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
    except OSError as exc:
        os.close(fd)
        raise ToolError(f"Cannot open {shown}: {exc.strerror or exc}") from None
    if stat.S_ISDIR(info.st_mode):
        os.close(fd)
        raise ToolError(
            f"{shown} is a directory, not a file. Use list_files to see what it contains."
        )
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise ToolError(f"{shown} is not a regular file, so it cannot be read.")
    return fd, info


def _read_fd(fd: int, limit: int, shown: str) -> bytes:
    """Read at most ``limit`` bytes from ``fd`` and close it."""
    try:
        with os.fdopen(fd, "rb") as handle:
            return handle.read(limit)
    except OSError as exc:
        raise ToolError(f"Cannot read {shown}: {exc.strerror or exc}") from None


def _is_binary(data: bytes) -> bool:
    return b"\x00" in data[:BINARY_SNIFF_BYTES]


def _walk_files(top: Path, prefix: str) -> Iterator[tuple[Path, str]]:
    """Regular files under ``top`` (sorted, depth first), never following symbolic links."""
    stack: list[tuple[Path, str]] = [(top, prefix)]
    while stack:
        directory, dir_prefix = stack.pop()
        try:
            with os.scandir(directory) as scan:
                children = sorted(scan, key=lambda entry: entry.name)
        except OSError:
            continue
        subdirs: list[tuple[Path, str]] = []
        for entry in children:
            if entry.name in SKIPPED_DIRS:
                continue
            try:
                if entry.is_symlink():
                    continue
                if entry.is_dir(follow_symlinks=False):
                    subdirs.append((Path(entry.path), f"{dir_prefix}{entry.name}/"))
                elif entry.is_file(follow_symlinks=False):
                    yield Path(entry.path), dir_prefix + entry.name
            except OSError:
                continue
        stack.extend(reversed(subdirs))


def _searchable_text(path: Path, shown: str) -> str:
    """The text of a file to search; :class:`ToolError` saying why when it is skipped."""
    fd, info = _open_regular_file(path, shown)
    if info.st_size > MAX_SEARCH_FILE_BYTES:
        os.close(fd)
        raise ToolError(f"{shown} is larger than 2 MiB, so search_files skips it.")
    data = _read_fd(fd, MAX_SEARCH_FILE_BYTES + 1, shown)
    if len(data) > MAX_SEARCH_FILE_BYTES:
        raise ToolError(f"{shown} is larger than 2 MiB, so search_files skips it.")
    if _is_binary(data):
        raise ToolError(f"{shown} is a binary file, so search_files skips it.")
    return data.decode("utf-8", errors="replace")


def _clip(line: str, match: re.Match[str]) -> str:
    """At most :data:`MAX_MATCH_LINE_CHARS` characters of ``line``, around the match."""
    if len(line) <= MAX_MATCH_LINE_CHARS:
        return line
    width = MAX_MATCH_LINE_CHARS - 2  # room for an ellipsis on each side
    start = max(0, min(match.start() - 100, len(line) - width))
    end = start + width
    head = "…" if start > 0 else ""
    tail = "…" if end < len(line) else ""
    return f"{head}{line[start:end]}{tail}"


def _search_files(
    workspace: Path,
    regex: re.Pattern[str],
    path: str | None,
    deadline: float,
    stop: threading.Event,
) -> str:
    real = resolve_in_workspace(workspace, path)
    shown = display_path(workspace, real)
    if real.is_dir():
        files: Iterator[tuple[Path, str]] = _walk_files(real, "" if shown == "." else shown + "/")
        explicit = False
    else:
        files = iter([(real, shown)])
        explicit = True

    matches: list[str] = []
    hit_limit = False
    out_of_time = False
    for file_path, relative in files:
        if stop.is_set() or time.monotonic() > deadline:
            out_of_time = True
            break
        try:
            text = _searchable_text(file_path, relative)
        except ToolError:
            if explicit:
                raise
            continue
        lines = text.split("\n")
        if lines and not lines[-1]:
            lines.pop()
        for number, raw in enumerate(lines, start=1):
            line = raw.removesuffix("\r")
            found = regex.search(line)
            if found is None:
                continue
            matches.append(f"{relative}:{number}: {_clip(line.rstrip(), found)}")
            if len(matches) >= MAX_SEARCH_MATCHES:
                hit_limit = True
                break
        if hit_limit:
            break

    where = "" if shown == "." else f" in {shown}"
    out = matches or [f"No matches for {regex.pattern}{where}"]
    if hit_limit:
        out.append(
            f"[Stopped after {MAX_SEARCH_MATCHES} matches; there may be more. "
            "Use a more specific pattern or path to see the rest.]"
        )
    if out_of_time:
        out.append(
            "[The search ran out of time, so these results are incomplete. "
            "Use a more specific path to search less.]"
        )
    return "\n".join(out)
