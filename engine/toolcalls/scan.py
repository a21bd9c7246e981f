"""Incremental scanners: where a held JSON value or a call without a closing tag ends.

They look only at nesting and string quoting, never at values, and keep their state between
deltas, so the answer is the same however the text was split.
"""

from __future__ import annotations

from typing import Literal, Protocol

ScanResult = Literal["more", "bad", "end", "fence"]


class JsonScan:
    """Checks, as text arrives, that it is (so far) a JSON object or array.

    :meth:`scan` continues over ``text[pos:]`` (the text only ever grows) and answers:

    * ``"more"``: still plausible, everything up to :attr:`pos` seen;
    * ``"bad"``: the character at :attr:`pos` cannot belong to one JSON value (``<`` outside a
      string, text after the value, anything but ``{``/``[`` first);
    * ``"end"`` (only with ``stop_at_end``): the value closed just before :attr:`pos`;
    * ``"fence"`` (only with ``fenced``): a closing ````` starts at :attr:`pos`, outside strings.

    ``;`` may separate several values (Llama writes several calls that way).
    """

    def __init__(self, *, fenced: bool = False, stop_at_end: bool = False, pos: int = 0) -> None:
        self.fenced = fenced
        self.stop_at_end = stop_at_end
        self.pos = pos
        self._depth = 0
        self._in_str = False
        self._escape = False
        self._closed = False

    def scan(self, text: str) -> ScanResult:
        while self.pos < len(text):
            ch = text[self.pos]
            if self._in_str:
                if self._escape:
                    self._escape = False
                elif ch == "\\":
                    self._escape = True
                elif ch == '"':
                    self._in_str = False
            elif self.fenced and ch == "`":
                if len(text) - self.pos < 3:
                    return "more"  # wait to see whether it is a closing fence
                return "fence" if text.startswith("```", self.pos) else "bad"
            elif self._closed and ch == ";":
                self._closed = False  # another value must follow
            elif ch == "<" or (self._closed and not ch.isspace()):
                return "bad"
            elif ch in "{[":
                self._depth += 1
            elif ch in "}]":
                if self._depth == 0:
                    return "bad"
                self._depth -= 1
                if self._depth == 0:
                    self._closed = True
                    if self.stop_at_end:
                        self.pos += 1
                        return "end"
            elif ch == '"' and self._depth:
                self._in_str = True
            elif self._depth == 0 and not ch.isspace():
                return "bad"
            self.pos += 1
        return "more"


class EndFinder(Protocol):
    """Finds the end of a call block that has no fixed closing tag of its own."""

    def feed(self, text: str) -> tuple[str, tuple[str, str] | None]:
        """Take the next call text. Return the part now known to be the call's body, and
        ``(closer, rest)`` once the call has ended: its closing markup and the text after it.
        Text that is neither (a possible start of the closer) is kept for the next feed."""
        ...

    def flush(self) -> tuple[str, str]:
        """The end of the turn: the text still kept back, as ``(body, closer)``."""
        ...


class FenceEnd:
    """A fenced call (```` ```tool_code ````) ends at the next run of three or more backticks
    outside a quoted string. A quote is taken to end at a newline, so one stray apostrophe cannot
    hide the closing fence."""

    def __init__(self) -> None:
        self._held = ""
        self._quote = ""
        self._escape = False

    def feed(self, text: str) -> tuple[str, tuple[str, str] | None]:
        text, self._held = self._held + text, ""
        i = 0
        while i < len(text):
            ch = text[i]
            if self._quote:
                if self._escape:
                    self._escape = False
                elif ch == "\\":
                    self._escape = True
                elif ch in (self._quote, "\n"):
                    self._quote = ""
            elif ch in "\"'":
                self._quote = ch
            elif ch == "`":
                run = len(text) - i - len(text[i:].lstrip("`"))
                if i + run == len(text):
                    self._held = text[i:]  # the run may still grow into a closing fence
                    return text[:i], None
                if run >= 3:
                    return text[:i], (text[i : i + run], text[i + run :])
                i += run
                continue
            i += 1
        return text, None

    def flush(self) -> tuple[str, str]:
        held, self._held = self._held, ""
        return ("", held) if len(held) >= 3 else (held, "")  # held: only ever backticks
