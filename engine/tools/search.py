"""``search_files``: lines matching a regular expression in the workspace's text files.

Matching uses the ``regex`` module in its ``re``-compatible mode (``VERSION0``: the syntax of
Python's :mod:`re`, plus possessive quantifiers, atomic groups, ``\\p{...}`` classes), because
:mod:`re` cannot be stopped: one catastrophically backtracking pattern (``^(\\w+)+$`` over a
long identifier) holds the GIL, and with it the server's event loop, for as long as it runs.
Here every match gets the time left before the tool's deadline (``timeout=``) and releases the
GIL while it runs (``concurrent=True``): the server keeps answering (``agent/status``, cancels,
approvals in other sessions), and the search ends at its time limit with a result that says it
ran out of time.

A file is searched as a whole (``MULTILINE``), and only the lines its matches touch are then
matched alone: a few match calls per file instead of one per line keep the search at least as
fast as the old ``re`` loop. That is exact for patterns that cannot match a line alone without
matching the whole text at the same place (no ``\\A``/``\\Z``/``\\G`` anchors, lookarounds,
atomic groups, possessive quantifiers or inline flag changes); the others are matched line by
line. Either way a line is reported only when the pattern matches it alone, as before.

Walking the tree and opening files go through :mod:`engine.workspace_fs` (by descriptor, never
through a symbolic link), so a folder swapped for a link mid-walk is not followed.
"""

from __future__ import annotations

import asyncio
import math
import os
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:  # imported on the first search, not at server start-up
    import regex
from pydantic import Field

from engine.tools.base import Tool, ToolArgs, ToolContext, ToolError, ToolKind, ToolOutcome
from engine.tools.textfiles import SKIPPED_DIRS, is_binary, read_fd
from engine.workspace_fs import Opened, WorkspaceFS, open_child_file, walk_files

MAX_SEARCH_MATCHES = 200  # search_files stops after this many matching lines
MAX_SEARCH_FILE_BYTES = 2 * 1024 * 1024  # search_files skips larger files
MAX_MATCH_LINE_CHARS = 300  # search_files shows at most this much of a matching line
SEARCH_TIME_FRACTION = 0.8  # search_files returns what it found after this part of the timeout

_LINE_ONLY = re.compile(r"\\[AZzG]|\(\?(?!:|P<|P=|[aiLmsux]+\))|[*+?}]\+")
"""Constructs whose meaning differs between a line and the whole text (anchors, lookarounds,
atomic groups, possessive quantifiers, inline flag changes): such patterns are matched per line."""


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


class _OutOfTime(Exception):
    pass


@dataclass
class Matcher:
    """A compiled pattern with a deadline shared by every match."""

    line: regex.Pattern[str]
    whole: regex.Pattern[str] | None
    """The same with MULTILINE, when searching the whole text is equivalent."""
    deadline: float
    stop: threading.Event

    @classmethod
    def compile(cls, pattern: str, deadline: float, stop: threading.Event) -> Matcher:
        import regex  # noqa: PLC0415 - 7 ms of import, not on the start-up path

        try:
            line = regex.compile(pattern, regex.VERSION0)
            whole = None
            if not _LINE_ONLY.search(pattern):
                whole = regex.compile(pattern, regex.VERSION0 | regex.MULTILINE)
        except (regex.error, OverflowError, RecursionError, ValueError) as exc:
            raise ToolError(f"Invalid regular expression {pattern!r}: {exc}") from None
        return cls(line, whole, deadline, stop)

    def _left(self) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0 or self.stop.is_set():
            raise _OutOfTime
        return min(left, 1e6)

    def matching_lines(self, text: str) -> Iterator[tuple[int, str, int]]:
        """``(line number, line, match start)`` for every line of ``text`` that matches."""
        if "\r" in text:
            text = text.replace("\r\n", "\n")  # a line's trailing "\r" is not part of it
        if self.whole is None:
            yield from self._each_line(text)
            return
        if not text:
            return
        # Every line that matches alone lies in (or under) a match of the whole text, so only
        # the lines those matches touch are matched again, alone.
        end_of_text = len(text) - 1 if text.endswith("\n") else len(text)
        checked = 0  # line numbers up to this one are done
        number, cursor = 1, 0
        try:
            for match in self.whole.finditer(text, timeout=self._left(), concurrent=True):
                number += text.count("\n", cursor, match.start())
                cursor = match.start()
                start = text.rfind("\n", 0, match.start()) + 1
                line_no, last = number, max(match.end() - 1, match.start())
                while start <= last and start <= end_of_text:
                    stop = text.find("\n", start)
                    stop = len(text) if stop < 0 else stop
                    if line_no > checked:
                        checked = line_no
                        found = self.search(text[start:stop])
                        if found is not None:
                            yield line_no, text[start:stop], found.start()
                    start, line_no = stop + 1, line_no + 1
        except TimeoutError:
            raise _OutOfTime from None

    def _each_line(self, text: str) -> Iterator[tuple[int, str, int]]:
        lines = text.split("\n")
        if lines and not lines[-1]:
            lines.pop()
        for number, line in enumerate(lines, start=1):
            found = self.search(line)
            if found is not None:
                yield number, line, found.start()

    def search(self, line: str) -> regex.Match[str] | None:
        try:
            return self.line.search(line, timeout=self._left(), concurrent=True)
        except TimeoutError:
            raise _OutOfTime from None


def _searchable_text(opened: Opened, shown: str) -> str:
    """The text of a file to search; :class:`ToolError` saying why when it is skipped."""
    if os.fstat(opened.fd).st_size > MAX_SEARCH_FILE_BYTES:
        os.close(opened.fd)
        raise ToolError(f"{shown} is larger than 2 MiB, so search_files skips it.")
    data = read_fd(opened.fd, MAX_SEARCH_FILE_BYTES + 1, shown)
    if len(data) > MAX_SEARCH_FILE_BYTES:
        raise ToolError(f"{shown} is larger than 2 MiB, so search_files skips it.")
    if is_binary(data):
        raise ToolError(f"{shown} is a binary file, so search_files skips it.")
    return data.decode("utf-8", errors="replace")


def _clip(line: str, start: int) -> str:
    """At most :data:`MAX_MATCH_LINE_CHARS` characters of ``line``, around a match at ``start``."""
    if len(line) <= MAX_MATCH_LINE_CHARS:
        return line
    width = MAX_MATCH_LINE_CHARS - 2  # room for an ellipsis on each side
    begin = max(0, min(start - 100, len(line) - width))
    end = begin + width
    head = "…" if begin > 0 else ""
    tail = "…" if end < len(line) else ""
    return f"{head}{line[begin:end]}{tail}"


def _texts(workspace: Path, path: str | None) -> tuple[str, Iterator[tuple[str, str]]]:
    """``(shown path, (file, text) pairs)``: the one file named, or every text file below the
    folder named. Naming a file that cannot be searched is an error the model sees."""
    with WorkspaceFS(workspace) as fs:
        top, is_dir = fs.open_entry(path)
    if not is_dir:
        return top.relative, iter([(top.relative, _searchable_text(top, top.relative))])

    def texts() -> Iterator[tuple[str, str]]:
        try:
            for dir_fd, child, shown in walk_files(top, SKIPPED_DIRS):
                try:
                    yield shown, _searchable_text(open_child_file(dir_fd, child, shown), shown)
                except ToolError:
                    continue
        finally:
            os.close(top.fd)

    return top.relative, texts()


def search_files(workspace: Path, matcher: Matcher, pattern: str, path: str | None) -> str:
    """The search itself (blocking: run it in a worker thread)."""
    shown, texts = _texts(workspace, path)
    matches: list[str] = []
    hit_limit = out_of_time = False
    try:
        for relative, text in texts:
            if matcher.stop.is_set() or time.monotonic() > matcher.deadline:
                raise _OutOfTime
            for number, line, start in matcher.matching_lines(text):
                matches.append(f"{relative}:{number}: {_clip(line.rstrip(), start)}")
                if len(matches) >= MAX_SEARCH_MATCHES:
                    hit_limit = True
                    break
            if hit_limit:
                break
    except _OutOfTime:
        out_of_time = True
    finally:
        close = getattr(texts, "close", None)
        if close is not None:
            close()
    where = "" if shown == "." else f" in {shown}"
    out = matches or [f"No matches for {pattern}{where}"]
    if hit_limit:
        out.append(
            f"[Stopped after {MAX_SEARCH_MATCHES} matches; there may be more. "
            "Use a more specific pattern or path to see the rest.]"
        )
    if out_of_time:
        out.append(
            "[The search ran out of time, so these results are incomplete. Use a more specific "
            "path, or a simpler pattern (nested repetition such as (\\w+)+ can take "
            "exponential time), to search less.]"
        )
    return "\n".join(out)


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
        budget = ctx.timeout_seconds * SEARCH_TIME_FRACTION
        deadline = time.monotonic() + budget if budget > 0 else math.inf
        stop = threading.Event()
        matcher = Matcher.compile(args.pattern, deadline, stop)
        try:
            text = await asyncio.to_thread(
                search_files, ctx.workspace, matcher, args.pattern, args.path
            )
        finally:
            stop.set()  # a cancelled search stops at its next match instead of running on
        return ToolOutcome(text=text)
