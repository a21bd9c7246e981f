"""Reading a git-style unified diff (``apply_patch``'s argument) and applying it to a file's text.

What is read: ``--- a/path`` / ``+++ b/path`` headers (``/dev/null`` creates or deletes a file; a
``diff --git`` line, ``index``, ``new file mode`` and the like may come before them; text before
the first header is ignored), ``@@ -l,s +l,s @@`` hunks of `` ``/``-``/``+`` lines and the ``\\
No newline at end of file`` marker. Models miscount hunk lengths: when the counts do not fit
the body, the body is what counts (as ``git apply --recount``), and a blank line inside a hunk is
an empty context line. Renames, copies, mode changes and binary patches are refused with a
message.

A hunk applies where its ``-``/`` `` lines are, exactly: at the line its header names, else at
the nearest place they match (after the previous hunk). It never applies loosely: when the lines
are not found, the call fails with what was expected and what is there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from engine.edits import EditAction
from engine.tools.base import ToolError
from engine.tools.matching import loose_matches

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_REFUSED = {
    "rename from": "renames",
    "rename to": "renames",
    "copy from": "copies",
    "copy to": "copies",
    "old mode": "mode changes",
    "new mode": "mode changes",
    "GIT binary patch": "binary patches",
    "Binary files": "binary patches",
}
_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


@dataclass
class Hunk:
    header: str
    old_start: int
    old: list[tuple[str, bool]] = field(default_factory=list)
    """The ``-`` and `` `` lines (without their line ends), each with whether it is context."""
    new: list[tuple[str, bool]] = field(default_factory=list)
    """The `` `` and ``+`` lines, each with whether it is context."""
    new_no_newline: bool = False
    """The new side ends without a newline (``\\ No newline at end of file`` after it)."""

    @property
    def old_lines(self) -> list[str]:
        return [text for text, _ in self.old]


@dataclass
class FilePatch:
    old_path: str | None
    new_path: str | None
    hunks: list[Hunk] = field(default_factory=list)
    executable: bool = False
    """``new file mode 100755``."""

    @property
    def action(self) -> EditAction:
        if self.old_path is None:
            return "create"
        return "delete" if self.new_path is None else "modify"

    @property
    def path(self) -> str:
        path = self.new_path if self.new_path is not None else self.old_path
        assert path is not None
        return path


class PatchError(ToolError):
    """The patch cannot be read or does not fit the file."""


def _unquote(name: str) -> str:
    """A path as git writes it: C-quoted (``"caf\\303\\251"``) when it has special characters."""
    if not (len(name) >= 2 and name[0] == '"' and name[-1] == '"'):
        return name
    out = bytearray()
    body = name[1:-1]
    i = 0
    while i < len(body):
        char = body[i]
        if char != "\\" or i + 1 == len(body):
            out += char.encode("utf-8")
            i += 1
        elif body[i + 1] in "01234567":
            out.append(int(body[i + 1 : i + 4], 8) & 0xFF)
            i += 4
        else:
            out.append(_ESCAPES.get(body[i + 1], ord(body[i + 1])))
            i += 2
    return out.decode("utf-8", errors="replace")


def _header_path(line: str, prefix: str) -> str | None:
    name = line[4:].split("\t", 1)[0].rstrip()
    name = _unquote(name)
    if name == "/dev/null":
        return None
    if name.startswith(prefix):
        name = name[len(prefix) :]
    if not name:
        raise PatchError(f"The header {line!r} names no file.")
    return name


def _is_body(line: str) -> bool:
    return line[:1] in (" ", "-", "+", "\\")


def _ends_hunk(lines: list[str], i: int) -> bool:
    """Whether line ``i`` starts something other than hunk body (or is the end)."""
    if i >= len(lines):
        return True
    line = lines[i]
    if line.startswith(("@@", "diff --git ")):
        return True
    if line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
        return True
    if line == "":  # blank lines: context if more body follows them
        j = i
        while j < len(lines) and lines[j] == "":
            j += 1
        return _ends_hunk(lines, j) or not _is_body(lines[j])
    return not _is_body(line)


def _read_body(hunk: Hunk, lines: list[str], i: int, counts: tuple[int, int] | None) -> int:
    """Fill ``hunk`` from the body starting at line ``i`` (exactly ``counts`` lines of each
    side, or up to whatever ends the body); the index after it."""
    old_left, new_left = counts if counts is not None else (0, 0)
    while i < len(lines):
        if counts is not None and old_left <= 0 and new_left <= 0:
            break
        if counts is None and _ends_hunk(lines, i):
            break
        line = lines[i]
        kind, text = (line[:1], line[1:]) if line else (" ", "")
        if kind == "\\":
            _mark(hunk, lines, i)
            i += 1
            continue
        if kind not in (" ", "-", "+"):
            raise PatchError(f"Line {i + 1} of the patch is not part of a hunk: {line!r}.")
        if kind in (" ", "-"):
            hunk.old.append((text, kind == " "))
            old_left -= 1
        if kind in (" ", "+"):
            hunk.new.append((text, kind == " "))
            hunk.new_no_newline = False
            new_left -= 1
        i += 1
    if counts is not None and (old_left > 0 or new_left > 0):
        raise PatchError("the hunk is shorter than its header says")
    if i < len(lines) and lines[i].startswith("\\"):
        _mark(hunk, lines, i)
        i += 1
    return i


def _mark(hunk: Hunk, lines: list[str], i: int) -> None:
    """A ``\\ No newline at end of file`` marker: it ends the new side when it follows one of
    its lines (a context or ``+`` line)."""
    previous = lines[i - 1][:1] if i > 0 and lines[i - 1] else " "
    if previous in (" ", "+"):
        hunk.new_no_newline = True


def _read_hunk(lines: list[str], i: int) -> tuple[Hunk, int]:
    match = _HUNK.match(lines[i])
    if match is None:
        raise PatchError(f"Line {i + 1} of the patch is not a valid hunk header: {lines[i]!r}.")
    old_count = int(match.group(2)) if match.group(2) is not None else 1
    new_count = int(match.group(4)) if match.group(4) is not None else 1
    start = int(match.group(1))
    counted = Hunk(lines[i], start)
    try:
        end = _read_body(counted, lines, i + 1, (old_count, new_count))
        if _ends_hunk(lines, end) and (counted.old or counted.new):
            return counted, end
    except PatchError:
        pass
    recounted = Hunk(lines[i], start)  # the counts do not fit the body: trust the body
    end = _read_body(recounted, lines, i + 1, None)
    if not (recounted.old or recounted.new):
        raise PatchError(f"The hunk at line {i + 1} of the patch ({lines[i]}) has no lines.")
    return recounted, end


def parse_patch(text: str) -> list[FilePatch]:
    """Every file of a unified diff, in order; :class:`PatchError` when it cannot be read."""
    lines = text.replace("\r\n", "\n").split("\n")
    files: list[FilePatch] = []
    executable = False
    i = 0
    while i < len(lines):
        line = lines[i]
        for start, what in _REFUSED.items():
            if line.startswith(start):
                raise PatchError(
                    f"apply_patch does not do {what} (line {i + 1}: {line!r}); change file "
                    "contents only, or create the new file and delete the old one."
                )
        if line.startswith("diff --git "):
            executable = False
        elif line.startswith("new file mode "):
            executable = line.rstrip().endswith("755")
        elif line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            old_path = _header_path(line, "a/")
            new_path = _header_path(lines[i + 1], "b/")
            if old_path is None and new_path is None:
                raise PatchError(f"Line {i + 1} of the patch names /dev/null on both sides.")
            if old_path is not None and new_path is not None and old_path != new_path:
                raise PatchError(
                    f"The patch renames {old_path} to {new_path} (lines {i + 1}-{i + 2}); "
                    "apply_patch does not rename: delete the old file and create the new one."
                )
            files.append(FilePatch(old_path, new_path, executable=executable))
            executable = False
            i += 2
            continue
        elif line.startswith("@@"):
            if not files:
                raise PatchError(
                    f"The hunk at line {i + 1} comes before any '--- a/path' / '+++ b/path' "
                    "header: say which file it changes."
                )
            hunk, i = _read_hunk(lines, i)
            files[-1].hunks.append(hunk)
            continue
        i += 1
    if not files:
        raise PatchError(
            "The patch holds no file: write a unified diff with '--- a/path' and '+++ b/path' "
            "headers and '@@ -l,s +l,s @@' hunks ('--- /dev/null' creates a file, "
            "'+++ /dev/null' deletes one)."
        )
    for patch in files:
        if patch.action != "delete" and not patch.hunks and patch.action == "modify":
            raise PatchError(f"The patch for {patch.path} has no hunks: nothing would change.")
    return files


# --- applying --------------------------------------------------------------------------------


def _matches(lines: list[str], at: int, block: list[str]) -> bool:
    if at < 0 or at + len(block) > len(lines):
        return False
    return all(lines[at + k] == want for k, want in enumerate(block))


def _place(lines: list[str], block: list[str], preferred: int, floor: int) -> int | None:
    """Where ``block`` is: at ``preferred`` if it is there, else the nearest place at or after
    ``floor``. An empty block (a hunk that only adds lines) goes at ``preferred``."""
    if not block:
        return max(preferred, floor) if preferred <= len(lines) else None
    if preferred >= floor and _matches(lines, preferred, block):
        return preferred
    best: int | None = None
    for at in range(floor, len(lines) - len(block) + 1):
        if lines[at] == block[0] and _matches(lines, at, block):
            if best is None or abs(at - preferred) < abs(best - preferred):
                best = at
            if at > preferred:
                break
    return best


def _mismatch(path: str, number: int, hunk: Hunk, lines: list[str], preferred: int) -> PatchError:
    expected = "\n".join(hunk.old_lines)
    at = min(max(preferred, 0), len(lines))
    found = "\n".join(lines[at : at + len(hunk.old)])
    where = loose_matches("\n".join(lines), expected)
    hint = ""
    if where:
        hint = (
            f" Its lines are at line {where[0]} if whitespace is ignored: copy them exactly "
            "(indentation included)."
        )
    return PatchError(
        f"Hunk {number} of {path} ({hunk.header}) does not match the file: its context and "
        f"removed lines were not found.{hint} Read the file again and write the patch against "
        f"what it holds.\nExpected:\n{expected}\nAt line {at + 1} the file has:\n{found}"
    )


def apply_to_text(text: str, patch: FilePatch, path: str) -> str:
    """``text`` (a file's content, ``\\n`` line ends) with every hunk of ``patch`` applied."""
    lines = text.split("\n")
    eol = text.endswith("\n") or text == ""
    if eol:
        lines.pop()
    out: list[str] = []
    position = 0  # the first line of ``lines`` not yet copied
    offset = 0  # where the last hunk was found, against where its header said
    new_eol = eol
    for number, hunk in enumerate(patch.hunks, start=1):
        expected = hunk.old_start - 1 if hunk.old else hunk.old_start
        block = hunk.old_lines
        at = _place(lines, block, expected + offset, position)
        if at is None:
            raise _mismatch(path, number, hunk, lines, expected + offset)
        offset = at - expected
        out += lines[position:at]
        context = iter(lines[at + k] for k, (_, is_context) in enumerate(hunk.old) if is_context)
        for new_line, is_context in hunk.new:
            out.append(next(context, new_line) if is_context else new_line)
        position = at + len(block)
        if position == len(lines):  # the hunk reaches the end of the file
            if hunk.new and hunk.new[-1][1] and hunk.old and hunk.old[-1][1]:
                new_eol = eol  # it ends with an unchanged line: as it was
            elif hunk.new:
                new_eol = not hunk.new_no_newline
            else:
                new_eol = True  # the last lines were removed: the line before them ends now
    out += lines[position:]
    if not out:
        return ""
    return "\n".join(out) + ("\n" if new_eol else "")
