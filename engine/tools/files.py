"""The read-only file tools: ``read_file``, ``list_files`` and ``search_files``.

Every path goes through :func:`engine.workspace.resolve_in_workspace`, so nothing outside the
workspace is read, listed or searched. Walking a tree never follows a symbolic link, files are
opened with ``O_NOFOLLOW`` where the platform has it, and anything that is not a regular file
(a FIFO, a device) is refused rather than read. All file I/O runs in a worker thread.
"""

from __future__ import annotations

import asyncio
import codecs
import math
import os
import re
import stat
import threading
import time
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

from pydantic import Field

from engine.tools.base import Tool, ToolArgs, ToolContext, ToolError, ToolKind, ToolOutcome
from engine.workspace import display_path, resolve_in_workspace

MAX_READ_BYTES = 256 * 1024  # read_file shows at most this many bytes of a file
BINARY_SNIFF_BYTES = 8 * 1024  # a NUL byte in the first this-many bytes makes a file binary
MAX_LIST_DEPTH = 4  # list_files shows entries at most this many levels below the directory
MAX_LIST_ENTRIES = 500  # list_files shows at most this many entries
MAX_LIST_SCAN = 20_000  # list_files stops counting the entries it does not show after this
MAX_SEARCH_MATCHES = 200  # search_files stops after this many matching lines
MAX_SEARCH_FILE_BYTES = 2 * 1024 * 1024  # search_files skips larger files
MAX_MATCH_LINE_CHARS = 300  # search_files shows at most this much of a matching line
SEARCH_TIME_FRACTION = 0.8  # search_files returns what it found after this part of the timeout

SKIPPED_DIRS: frozenset[str] = frozenset(
    {".git", "node_modules", "__pycache__", ".venv", ".mypy_cache", ".ruff_cache", ".pytest_cache"}
)
"""Names that ``list_files`` and ``search_files`` never descend into or show."""

_OPEN_FLAGS: int = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)  # opening a FIFO must not hang; harmless for regular files
    | getattr(os, "O_BINARY", 0)
)


# --- argument models -------------------------------------------------------------------------


class ReadFileArgs(ToolArgs):
    """Arguments of ``read_file``."""

    path: str = Field(
        description="Path of the file to read, relative to the workspace root "
        "(for example 'src/main.py')."
    )


class ListFilesArgs(ToolArgs):
    """Arguments of ``list_files``."""

    path: str | None = Field(
        default=None,
        description="Directory to list, relative to the workspace root "
        "(for example 'src'). Leave it out to list the whole workspace.",
    )


class SearchFilesArgs(ToolArgs):
    """Arguments of ``search_files``."""

    pattern: str = Field(
        description="Python regular expression to look for in each line "
        "(for example 'def main' or 'TODO|FIXME')."
    )
    path: str | None = Field(
        default=None,
        description="File or directory to search, relative to the workspace root. "
        "Leave it out to search the whole workspace.",
    )


# --- shared helpers --------------------------------------------------------------------------


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


# --- read_file -------------------------------------------------------------------------------


def _read_file(workspace: Path, path: str) -> str:
    real = resolve_in_workspace(workspace, path)
    shown = display_path(workspace, real)
    fd, info = _open_regular_file(real, shown)
    data = _read_fd(fd, MAX_READ_BYTES + 1, shown)
    if _is_binary(data):
        raise ToolError(
            f"{shown} looks like a binary file (it contains NUL bytes); "
            "read_file only shows text files."
        )
    if len(data) <= MAX_READ_BYTES:
        text = data.decode("utf-8", errors="replace")
        return text if text else f"({shown} is an empty file)"
    total = max(info.st_size, len(data))
    # An incremental decoder drops a multi-byte character cut in half at the limit.
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    text = decoder.decode(data[:MAX_READ_BYTES], final=False)
    omitted = total - MAX_READ_BYTES
    return (
        f"{text}\n\n[Truncated: {shown} is {total} bytes long; only the first {MAX_READ_BYTES} "
        f"bytes are shown and {omitted} bytes were omitted. "
        "Use search_files to find the lines you need.]"
    )


# --- list_files ------------------------------------------------------------------------------


def _tree_key(relative: str) -> list[str]:
    """Sort key that keeps a directory's contents right after the directory."""
    return relative.rstrip("/").split("/")


def _list_files(workspace: Path, path: str | None) -> str:
    real = resolve_in_workspace(workspace, path)
    shown = display_path(workspace, real)
    if not real.is_dir():
        raise ToolError(f"{shown} is a file, not a directory. Use read_file to read it.")
    prefix = "" if shown == "." else shown + "/"

    # Breadth first, so that when the listing is cut short the shallow entries are the ones shown.
    shown_lines: list[tuple[list[str], str]] = []
    total = 0
    counted_all = True
    unexpanded = 0
    unreadable: list[str] = []
    queue: deque[tuple[Path, str, int]] = deque([(real, prefix, 1)])
    while queue:
        directory, dir_prefix, depth = queue.popleft()
        try:
            with os.scandir(directory) as scan:
                children = sorted(scan, key=lambda entry: entry.name)
        except OSError as exc:
            if directory == real:
                raise ToolError(f"Cannot list {shown}: {exc.strerror or exc}") from None
            unreadable.append(dir_prefix)
            continue
        for entry in children:
            if entry.name in SKIPPED_DIRS:
                continue
            total += 1
            if total > MAX_LIST_SCAN:
                counted_all = False
                queue.clear()
                break
            relative = dir_prefix + entry.name
            try:
                if entry.is_symlink():
                    try:
                        target = os.readlink(entry.path)
                    except OSError:
                        target = "?"
                    line = f"{relative} -> {target}"
                elif entry.is_dir(follow_symlinks=False):
                    line = relative + "/"
                    if depth < MAX_LIST_DEPTH:
                        queue.append((Path(entry.path), line, depth + 1))
                    else:
                        unexpanded += 1
                else:
                    line = relative
            except OSError:
                line = relative
            if len(shown_lines) < MAX_LIST_ENTRIES:
                shown_lines.append((_tree_key(relative), line))

    if total == 0 and not unreadable:
        return "(empty directory)"
    lines = [line for _key, line in sorted(shown_lines)]
    omitted = min(total, MAX_LIST_SCAN) - len(shown_lines)
    if omitted > 0 or not counted_all:
        more = f"{omitted}" if counted_all else f"more than {omitted}"
        lines.append(
            f"[{more} more entries not shown. "
            "Call list_files with a subdirectory as path to see them.]"
        )
    if unexpanded:
        lines.append(
            f"[Directories {MAX_LIST_DEPTH} levels down are not expanded. "
            "Call list_files with one of them as path to see inside.]"
        )
    if unreadable:
        lines.append(f"[Could not read: {', '.join(sorted(unreadable))}]")
    return "\n".join(lines)


# --- search_files ----------------------------------------------------------------------------


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


# --- the tools -------------------------------------------------------------------------------


class ReadFileTool(Tool):
    """``read_file``: the text of one file in the workspace."""

    name: ClassVar[str] = "read_file"
    kind: ClassVar[ToolKind] = "read"
    description: ClassVar[str] = "Read a text file in the workspace and return its contents."
    args_model: ClassVar[type[ToolArgs]] = ReadFileArgs

    async def run(self, args: ReadFileArgs, ctx: ToolContext) -> ToolOutcome:
        text = await asyncio.to_thread(_read_file, ctx.workspace, args.path)
        return ToolOutcome(text=text)


class ListFilesTool(Tool):
    """``list_files``: the files and directories under a directory in the workspace."""

    name: ClassVar[str] = "list_files"
    kind: ClassVar[ToolKind] = "read"
    description: ClassVar[str] = (
        "List the files and folders inside a folder of the workspace, "
        f"including subfolders up to {MAX_LIST_DEPTH} levels deep."
    )
    args_model: ClassVar[type[ToolArgs]] = ListFilesArgs

    async def run(self, args: ListFilesArgs, ctx: ToolContext) -> ToolOutcome:
        text = await asyncio.to_thread(_list_files, ctx.workspace, args.path)
        return ToolOutcome(text=text)


class SearchFilesTool(Tool):
    """``search_files``: lines matching a regular expression in the workspace's text files."""

    name: ClassVar[str] = "search_files"
    kind: ClassVar[ToolKind] = "search"
    description: ClassVar[str] = (
        "Search the text files in the workspace for lines matching a regular expression "
        "and show each match as path:line number: line."
    )
    args_model: ClassVar[type[ToolArgs]] = SearchFilesArgs

    async def run(self, args: SearchFilesArgs, ctx: ToolContext) -> ToolOutcome:
        try:
            regex = re.compile(args.pattern)
        except (re.error, OverflowError, RecursionError) as exc:
            raise ToolError(f"Invalid regular expression {args.pattern!r}: {exc}") from None
        budget = ctx.timeout_seconds * SEARCH_TIME_FRACTION
        deadline = time.monotonic() + budget if budget > 0 else math.inf
        stop = threading.Event()
        try:
            text = await asyncio.to_thread(
                _search_files, ctx.workspace, regex, args.path, deadline, stop
            )
        finally:
            stop.set()  # a cancelled search stops at the next file instead of running on
        return ToolOutcome(text=text)


FILE_TOOLS: tuple[Tool, ...] = (ReadFileTool(), ListFilesTool(), SearchFilesTool())
"""The read-only file tools, ready to register."""
