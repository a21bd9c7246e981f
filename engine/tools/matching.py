"""Finding ``edit_file``'s ``old_text`` in a file, and saying why it was not found.

A match is exact: every character, indentation and line break included. When there is no exact
match, the message helps the model retry: where the text is when whitespace is ignored (with the
file's exact lines, to copy), or where its first line appears; when there are several matches,
how many and on which lines.
"""

from __future__ import annotations

MAX_LISTED = 10
"""At most this many line numbers are listed in a message."""
MAX_QUOTED_LINES = 40
"""A near-match quoted back to the model is cut after this many lines."""


def find_all(text: str, needle: str) -> list[int]:
    """The offsets of every non-overlapping occurrence of ``needle`` (as :meth:`str.count`)."""
    found: list[int] = []
    at = text.find(needle)
    while at >= 0:
        found.append(at)
        at = text.find(needle, at + len(needle))
    return found


def line_numbers(text: str, offsets: list[int]) -> list[int]:
    """The 1-based line of each offset (offsets in increasing order)."""
    numbers: list[int] = []
    line, last = 1, 0
    for offset in offsets:
        line += text.count("\n", last, offset)
        last = offset
        numbers.append(line)
    return numbers


def _squash(line: str) -> str:
    return " ".join(line.split())


def listed(numbers: list[int]) -> str:
    shown = ", ".join(str(n) for n in numbers[:MAX_LISTED])
    return shown + (f" and {len(numbers) - MAX_LISTED} more" if len(numbers) > MAX_LISTED else "")


def loose_matches(text: str, needle: str) -> list[int]:
    """The 1-based lines where ``needle`` starts when whitespace is ignored: runs of spaces and
    tabs count as one, indentation and line-end spaces not at all. Whole lines are compared; a
    one-line needle may also be part of a line."""
    wanted = [_squash(line) for line in needle.strip("\n").split("\n")]
    if not any(wanted):
        return []
    lines = [_squash(line) for line in text.split("\n")]
    found: list[int] = []
    if len(wanted) == 1:
        return [n for n, line in enumerate(lines, start=1) if wanted[0] in line][: MAX_LISTED + 1]
    for start in range(len(lines) - len(wanted) + 1):
        if lines[start] == wanted[0] and lines[start : start + len(wanted)] == wanted:
            found.append(start + 1)
            if len(found) > MAX_LISTED:
                break
    return found


def not_found(text: str, needle: str, shown: str) -> str:
    """Why ``needle`` is not in ``text`` (the file ``shown``), for the model."""
    loose = loose_matches(text, needle)
    if loose:
        first = loose[0]
        count = len(needle.strip("\n").split("\n"))
        lines = text.split("\n")[first - 1 : first - 1 + min(count, MAX_QUOTED_LINES)]
        where = f"line {first}" if count == 1 else f"lines {first}-{first + count - 1}"
        more = f" (also at lines {listed(loose[1:])})" if len(loose) > 1 else ""
        return (
            f"old_text was not found in {shown}, but it matches {where}{more} if whitespace is "
            "ignored (indentation, spaces or tabs differ). Copy the text exactly as the file has "
            f"it; {where} of {shown} read:\n" + "\n".join(lines)
        )
    first_line = next((line.strip() for line in needle.split("\n") if line.strip()), "")
    hint = ""
    if first_line:
        numbers = [n for n, line in enumerate(text.split("\n"), start=1) if first_line in line]
        if numbers:
            hint = (
                f" Its first line appears at line(s) {listed(numbers)}; the lines after it differ."
            )
    return (
        f"old_text was not found in {shown}.{hint} Read the file again with read_file and copy "
        "the text to replace exactly, including indentation and line breaks."
    )


def too_many(text: str, offsets: list[int], shown: str) -> str:
    numbers = line_numbers(text, offsets)
    return (
        f"old_text matches {len(offsets)} times in {shown} (at lines {listed(numbers)}); it must "
        "match exactly once. Add surrounding lines to old_text so it is unique, or set "
        "replace_all to true to change every match."
    )
