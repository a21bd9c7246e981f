"""search_files' matcher: the same lines as matching every line alone with ``re``, a time limit
that holds for catastrophic patterns, and the GIL released while matching (finding 4)."""

from __future__ import annotations

import contextlib
import re
import threading
import time

import pytest

from engine.tools.search import Matcher, _OutOfTime

TEXTS = [
    "",
    "\n",
    "a\n b\nab\n",
    "x\ny\n\nfoo bar\r\nbaz foo\r\nlast line without newline",
    "def main():\n    pass\n\n\ndef other(x):\n    return x  # TODO\n",
    "c\nabc\n\n\nc",
    "αβγ foo\nFOO\n",
]
PATTERNS = [
    r"a\s*b",
    r"x\s*y|y",
    r"^$",
    r"^",
    r"$",
    r"\bfoo\b",
    r"(?i)foo",
    r"\Aabc",
    r"c$",
    r"o\Z",
    r"(?<=a)b",
    r"(?<!\s)b",
    r"def \w+",
    r"[^x]+",
    r"\s+",
    r"x*",
    r"(\w)\1",
    r"line$|^last",
]


def _per_line(pattern: str, text: str) -> list[tuple[int, str, int]]:
    """The definition: every line alone, with ``re`` (a trailing "\\r" is not part of a line)."""
    lines = text.split("\n")
    if lines and not lines[-1]:
        lines.pop()
    found = []
    for number, raw in enumerate(lines, start=1):
        line = raw.removesuffix("\r")
        match = re.search(pattern, line)
        if match is not None:
            found.append((number, line, match.start()))
    return found


@pytest.mark.parametrize("pattern", PATTERNS)
def test_whole_text_matching_finds_exactly_the_lines_that_match_alone(pattern: str) -> None:
    matcher = Matcher.compile(pattern, time.monotonic() + 30, threading.Event())
    for text in TEXTS:
        assert list(matcher.matching_lines(text)) == _per_line(pattern, text), (pattern, text)


def test_a_catastrophic_pattern_stops_at_its_deadline_without_holding_the_gil() -> None:
    text = "a" * 40 + "!\n"
    matcher = Matcher.compile(r"^(\w|\w)*$", time.monotonic() + 1.0, threading.Event())
    ticks = 0
    done = threading.Event()

    def tick() -> None:
        nonlocal ticks
        while not done.is_set():
            ticks += 1
            time.sleep(0.01)

    thread = threading.Thread(target=tick)
    thread.start()
    with pytest.raises(_OutOfTime):  # without a deadline this match would run for hours
        list(matcher.matching_lines(text))
    done.set()
    thread.join()
    # The other thread kept running meanwhile (the match does not hold the GIL): ~100 ticks in
    # the second the match runs on a quiet machine; a held GIL would allow one or two.
    assert ticks >= 5


def test_the_patterns_from_finding_4_end_quickly_or_out_of_time() -> None:
    matcher = Matcher.compile(r"^(\w+)+$", time.monotonic() + 5, threading.Event())
    with contextlib.suppress(_OutOfTime):  # stopping at its deadline is fine too
        assert list(matcher.matching_lines("x = " + "a" * 5000 + "!\n")) == []
