"""Unified diffs (git style) of a file's text before and after an edit, fast on large files.

An edit changes a few lines of a file; :mod:`difflib` compares every line of it. Here the common
head and tail are found first by comparing the texts in blocks (C-speed string comparisons) and
:class:`difflib.SequenceMatcher` only sees the lines in between, so a one-line change in a 1 MB
file costs about a millisecond. The output is what ``diff -u``/``git diff`` print (three lines of
context, ``\\ No newline at end of file`` where a file ends without one), and
:mod:`engine.tools.patch` reads it back.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator

from engine.edits import EditAction

CONTEXT = 3
NO_NEWLINE = "\\ No newline at end of file"
_BLOCK = 4096

Opcode = tuple[str, int, int, int, int]


def split_lines(text: str) -> list[str]:
    """Lines with their ``\\n`` (the last one without, when the text does not end with one).
    Only ``\\n`` ends a line (:meth:`str.splitlines` also splits at form feeds and the like)."""
    if not text:
        return []
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _common_prefix(a: str, b: str) -> int:
    """The length of the common head of ``a`` and ``b``: galloping over ever larger blocks,
    then halving down to the first difference (a few dozen C-speed comparisons)."""
    limit = min(len(a), len(b))
    i, step = 0, _BLOCK
    while i + step <= limit and a[i : i + step] == b[i : i + step]:
        i += step
        step *= 2
    while step > 1:
        step //= 2
        if i + step <= limit and a[i : i + step] == b[i : i + step]:
            i += step
    while i < limit and a[i] == b[i]:
        i += 1
    return i


def _common_suffix(a: str, b: str, limit: int) -> int:
    """The length of the common tail of ``a`` and ``b``, at most ``limit`` (as above)."""
    la, lb = len(a), len(b)
    n, step = 0, _BLOCK
    while n + step <= limit and a[la - n - step : la - n] == b[lb - n - step : lb - n]:
        n += step
        step *= 2
    while step > 1:
        step //= 2
        if n + step <= limit and a[la - n - step : la - n] == b[lb - n - step : lb - n]:
            n += step
    while n < limit and a[la - n - 1] == b[lb - n - 1]:
        n += 1
    return n


def _window(a: str, b: str) -> tuple[int, int, int, int, int, int]:
    """Where ``a`` and ``b`` differ, in whole lines: ``(start, cut, end_a, stop_a, end_b,
    stop_b)``. ``a[:cut] == b[:cut]`` and ``a[end_a:] == b[end_b:]`` are the common head and tail
    (both cut at line starts); ``start`` and ``stop_*`` add :data:`CONTEXT` lines around."""
    cut = a.rfind("\n", 0, _common_prefix(a, b)) + 1  # the line of the first difference
    tail = _common_suffix(a, b, min(len(a), len(b)) - cut)
    end_a, end_b = len(a) - tail, len(b) - tail
    if not ((end_a == 0 or a[end_a - 1] == "\n") and (end_b == 0 or b[end_b - 1] == "\n")):
        newline = a.find("\n", end_a)  # the tail starts mid-line: start it at the next line
        end_a = len(a) if newline < 0 else newline + 1
        end_b = end_a - len(a) + len(b)
    start = cut
    for _ in range(CONTEXT):
        if start == 0:
            break
        start = a.rfind("\n", 0, start - 1) + 1
    stop_a = end_a
    for _ in range(CONTEXT):
        if stop_a >= len(a):
            break
        newline = a.find("\n", stop_a)
        stop_a = len(a) if newline < 0 else newline + 1
    return start, cut, end_a, stop_a, end_b, stop_a - len(a) + len(b)


def _hunks(a: str, b: str) -> tuple[int, list[str], list[str], list[list[Opcode]]]:
    """The line offset of the window, its lines in ``a`` and ``b``, and the hunks in it."""
    start, cut, end_a, stop_a, _end_b, stop_b = _window(a, b)
    a_lines, b_lines = split_lines(a[start:stop_a]), split_lines(b[start:stop_b])
    first = a.count("\n", start, cut)
    after = len(split_lines(a[end_a:stop_a]))
    last_a, last_b = len(a_lines) - after, len(b_lines) - after
    codes: list[Opcode] = [("equal", 0, first, 0, first)]
    matcher = difflib.SequenceMatcher(None, a_lines[first:last_a], b_lines[first:last_b])
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        codes.append((tag, i1 + first, i2 + first, j1 + first, j2 + first))
    codes.append(("equal", last_a, len(a_lines), last_b, len(b_lines)))
    return a.count("\n", 0, start), a_lines, b_lines, list(_groups(codes))


def _groups(codes: list[Opcode], n: int = CONTEXT) -> Iterator[list[Opcode]]:
    """Hunks: the changes with ``n`` lines of context (difflib's grouping)."""
    codes = [c for c in codes if c[1] != c[2] or c[3] != c[4]]
    if not codes or all(c[0] == "equal" for c in codes):
        return
    if codes[0][0] == "equal":
        tag, i1, i2, j1, j2 = codes[0]
        codes[0] = tag, max(i1, i2 - n), i2, max(j1, j2 - n), j2
    if codes[-1][0] == "equal":
        tag, i1, i2, j1, j2 = codes[-1]
        codes[-1] = tag, i1, min(i2, i1 + n), j1, min(j2, j1 + n)
    group: list[Opcode] = []
    for tag, i1, i2, j1, j2 in codes:
        start_a, start_b = i1, j1
        if tag == "equal" and i2 - i1 > 2 * n:
            group.append((tag, i1, min(i2, i1 + n), j1, min(j2, j1 + n)))
            yield group
            group = []
            start_a, start_b = max(i1, i2 - n), max(j1, j2 - n)
        group.append((tag, start_a, i2, start_b, j2))
    if group and not (len(group) == 1 and group[0][0] == "equal"):
        yield group


def _range(start: int, stop: int) -> str:
    length = stop - start
    if length == 1:
        return str(start + 1)
    return f"{start if length == 0 else start + 1},{length}"


def _emit(out: list[str], prefix: str, line: str) -> None:
    if line.endswith("\n"):
        out.append(prefix + line)
    else:
        out.append(f"{prefix}{line}\n{NO_NEWLINE}\n")


def unified_diff(old: str, new: str, from_file: str, to_file: str) -> str:
    """The unified diff from ``old`` to ``new`` ("" when they are equal)."""
    if old == new:
        return ""
    offset, a_lines, b_lines, groups = _hunks(old, new)
    out = [f"--- {from_file}\n", f"+++ {to_file}\n"]
    for group in groups:
        first, last = group[0], group[-1]
        old_range = _range(first[1] + offset, last[2] + offset)
        new_range = _range(first[3] + offset, last[4] + offset)
        out.append(f"@@ -{old_range} +{new_range} @@\n")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                for line in a_lines[i1:i2]:
                    _emit(out, " ", line)
                continue
            for line in a_lines[i1:i2]:
                _emit(out, "-", line)
            for line in b_lines[j1:j2]:
                _emit(out, "+", line)
    return "".join(out)


def file_diff(path: str, action: EditAction, old: str | None, new: str | None) -> str:
    """The diff of one file, headed as git heads it (``/dev/null`` for a created or deleted
    file). A new empty file, or a deleted one, has a header and no hunk."""
    from_file = "/dev/null" if action == "create" else f"a/{path}"
    to_file = "/dev/null" if action == "delete" else f"b/{path}"
    body = unified_diff(old or "", new or "", from_file, to_file)
    return body or f"--- {from_file}\n+++ {to_file}\n"


def diff_counts(diff: str) -> tuple[int, int]:
    """Lines added and removed by the unified diff of one file."""
    added = removed = 0
    in_hunk = False
    for line in diff.split("\n"):
        if line.startswith("@@"):
            in_hunk = True
        elif in_hunk and line.startswith("+"):
            added += 1
        elif in_hunk and line.startswith("-"):
            removed += 1
        elif not line.startswith((" ", "\\")):
            in_hunk = False  # a file header, or the end
    return added, removed
