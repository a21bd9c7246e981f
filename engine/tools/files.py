"""The read-only file tools: ``read_file``, ``list_files`` and ``search_files``.

Every path is opened through :class:`engine.workspace_fs.WorkspaceFS`: each component relative
to its parent's descriptor, never following a symbolic link the kernel would resolve, so nothing
outside the workspace is read, listed or searched even while approved code swaps folders for
links. Walking a tree never follows a symbolic link, and anything that is not a regular file (a
FIFO, a device) is refused rather than read. All file I/O runs in a worker thread.

``search_files`` lives in :mod:`engine.tools.search`.
"""

from __future__ import annotations

import asyncio
import codecs
import os
from collections import deque
from pathlib import Path
from typing import ClassVar

from pydantic import Field

from engine.edits import ReadLedger, digest
from engine.tools.base import Tool, ToolArgs, ToolContext, ToolError, ToolKind, ToolOutcome
from engine.tools.filetext import MAX_EDIT_BYTES, sniff_encoding
from engine.tools.search import (
    MAX_SEARCH_FILE_BYTES,
    MAX_SEARCH_MATCHES,
    SearchFilesArgs,
    SearchFilesTool,
)
from engine.tools.textfiles import SKIPPED_DIRS, is_binary, read_fd
from engine.workspace_fs import Opened, WorkspaceFS

__all__ = [
    "FILE_TOOLS",
    "MAX_SEARCH_FILE_BYTES",
    "MAX_SEARCH_MATCHES",
    "ListFilesTool",
    "ReadFileTool",
    "SearchFilesArgs",
    "SearchFilesTool",
]

MAX_READ_BYTES = 256 * 1024  # read_file shows at most this many bytes of a file
MAX_LIST_DEPTH = 4  # list_files shows entries at most this many levels below the directory
MAX_LIST_ENTRIES = 500  # list_files shows at most this many entries
MAX_LIST_SCAN = 20_000  # list_files stops counting the entries it does not show after this


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


# --- read_file -------------------------------------------------------------------------------


def _read_file(workspace: Path, path: str, reads: ReadLedger | None = None) -> str:
    with WorkspaceFS(workspace) as fs:
        opened, info = fs.open_file(path)
    shown = opened.relative
    # The whole file (up to what the edit tools change) is read, for the read ledger's digest.
    data = read_fd(opened.fd, MAX_EDIT_BYTES + 1, shown)
    encoding, bom = sniff_encoding(data)
    body = data[len(bom) :]
    if encoding == "utf-8" and is_binary(body):
        raise ToolError(
            f"{shown} looks like a binary file (it contains NUL bytes); "
            "read_file only shows text files."
        )
    if reads is not None and len(data) <= MAX_EDIT_BYTES:
        reads.record(shown, digest(data))  # what the model read, for read-before-edit
    if len(body) <= MAX_READ_BYTES:
        text = body.decode(encoding, errors="replace")
        return text if text else f"({shown} is an empty file)"
    total = max(info.st_size, len(data))
    # An incremental decoder drops a multi-byte character cut in half at the limit.
    decoder = codecs.getincrementaldecoder(encoding)(errors="replace")
    text = decoder.decode(body[:MAX_READ_BYTES], final=False)
    omitted = total - len(bom) - MAX_READ_BYTES
    return (
        f"{text}\n\n[Truncated: {shown} is {total} bytes long; only the first {MAX_READ_BYTES} "
        f"bytes are shown and {omitted} bytes were omitted. "
        "Use search_files to find the lines you need.]"
    )


# --- list_files ------------------------------------------------------------------------------


def _tree_key(relative: str) -> list[str]:
    """Sort key that keeps a directory's contents right after the directory."""
    return relative.rstrip("/").split("/")


def _open_below(top: int, names: tuple[str, ...]) -> int:
    """The folder ``names`` below ``top``, each opened by descriptor without following links."""
    fd = os.dup(top)
    for name in names:
        try:
            child = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
        finally:
            os.close(fd)
        fd = child
    return fd


def _list_files(workspace: Path, path: str | None) -> str:
    with WorkspaceFS(workspace) as fs:
        top = fs.open_dir(path)
    try:
        return _list_opened(top)
    finally:
        os.close(top.fd)


def _list_opened(top: Opened) -> str:
    shown = top.relative
    prefix = "" if shown == "." else shown + "/"

    # Breadth first, so that when the listing is cut short the shallow entries are the ones shown.
    shown_lines: list[tuple[list[str], str]] = []
    total = 0
    counted_all = True
    unexpanded = 0
    unreadable: list[str] = []
    queue: deque[tuple[tuple[str, ...], str, int]] = deque([((), prefix, 1)])
    while queue:
        names, dir_prefix, depth = queue.popleft()
        try:
            fd = _open_below(top.fd, names)
            try:
                children = sorted(os.scandir(fd), key=lambda entry: entry.name)
                links = {e.name: _readlink(e.name, fd) for e in children if e.is_symlink()}
            finally:
                os.close(fd)
        except OSError as exc:
            if not names:
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
                if entry.name in links:
                    line = f"{relative} -> {links[entry.name]}"
                elif entry.is_dir(follow_symlinks=False):
                    line = relative + "/"
                    if depth < MAX_LIST_DEPTH:
                        queue.append(((*names, entry.name), line, depth + 1))
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


def _readlink(name: str, dir_fd: int) -> str:
    try:
        return os.readlink(name, dir_fd=dir_fd)
    except OSError:
        return "?"


# --- the tools -------------------------------------------------------------------------------


class ReadFileTool(Tool):
    """``read_file``: the text of one file in the workspace."""

    name: ClassVar[str] = "read_file"
    kind: ClassVar[ToolKind] = "read"
    description: ClassVar[str] = "Read a text file in the workspace and return its contents."
    args_model: ClassVar[type[ToolArgs]] = ReadFileArgs

    async def run(self, args: ReadFileArgs, ctx: ToolContext) -> ToolOutcome:
        text = await asyncio.to_thread(_read_file, ctx.workspace, args.path, ctx.reads)
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


FILE_TOOLS: tuple[Tool, ...] = (ReadFileTool(), ListFilesTool(), SearchFilesTool())
"""The read-only file tools, ready to register."""
