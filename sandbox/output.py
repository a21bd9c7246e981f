"""A command's output: decoded incrementally, streamed live up to a cap, kept for the model as
head and tail with a notice of what was cut, with notices (timeout, limits) appended."""

from __future__ import annotations

import codecs
import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

log = logging.getLogger(__name__)


def notice(message: str) -> str:
    return f"[gatehouse] {message}"


def human_size(n: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.4g} {unit}"
    return f"{n} bytes"


@dataclass(frozen=True)
class OutputLimits:
    """The caps of one command's output (see ``sandbox.runner.ExecRequest``)."""

    model: int
    """Characters the model receives: head and tail, the middle cut with a notice."""
    stream: int
    """Bytes streamed live; past it one notice line, then none."""
    kill: int
    """Total bytes past which the command is killed."""


class CommandOutput:
    """Decodes the output, streams it up to a byte cap, keeps the model's head and tail."""

    def __init__(self, on_output: Callable[[str], None], limits: OutputLimits) -> None:
        self._on_output = on_output
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._stream_limit = self._stream_room = limits.stream
        self._kill_room = limits.kill
        self._streaming = True
        self._stream_ends_line = True
        self._head_room = limits.model // 2
        self._tail_cap = limits.model - self._head_room
        self._head: list[str] = []
        self._tail: deque[str] = deque()
        self._tail_len = self._cut_chars = self._cut_lines = 0
        self._notices: list[str] = []

    def feed(self, data: bytes) -> bool:
        """Take a chunk; False when it passed the kill limit (the excess is dropped)."""
        within = len(data) <= self._kill_room
        data = data[: self._kill_room]
        self._kill_room -= len(data)
        if self._streaming and len(data) > self._stream_room:
            shown = self._decoder.decode(data[: self._stream_room])
            self._emit(shown)
            self._keep(shown)
            self._streaming = False
            self._emit_line(
                notice(
                    f"Live output stops here: it passed {human_size(self._stream_limit)}. "
                    "The result will show the beginning and the end."
                )
            )
            data = data[self._stream_room :]
        text = self._decoder.decode(data)
        if self._streaming:
            self._stream_room -= len(data)
            self._emit(text)
        self._keep(text)
        return within

    def finish(self) -> None:
        """Flush a trailing incomplete character (as U+FFFD)."""
        text = self._decoder.decode(b"", final=True)
        if self._streaming:
            self._emit(text)
        self._keep(text)

    def addnotice(self, message: str) -> None:
        """A line appended to the model's output and streamed live."""
        line = notice(message)
        self._notices.append(line)
        self._emit_line(line)

    def model_text(self) -> str:
        """Exactly what the model receives."""
        text = head = "".join(self._head)
        if self._cut_chars:
            text += "" if not text or text.endswith("\n") else "\n"
            text += notice(
                f"Output truncated: {self._cut_chars:,} characters ({self._cut_lines:,} lines) "
                f"were cut here; the first {len(head):,} and the last {self._tail_len:,} "
                "characters are shown.\n"
            )
        text += "".join(self._tail)
        if self._notices:
            text += "" if not text or text.endswith("\n") else "\n"
            text += "\n".join(self._notices)
        return text

    def _keep(self, text: str) -> None:
        if self._head_room:
            self._head.append(text[: self._head_room])
            text = text[self._head_room :]
            self._head_room -= len(self._head[-1])
        if not text:
            return
        self._tail.append(text)
        self._tail_len += len(text)
        while self._tail_len > self._tail_cap:
            excess = self._tail_len - self._tail_cap
            first = self._tail[0]
            dropped = first[:excess]
            if len(first) <= excess:
                self._tail.popleft()
            else:
                self._tail[0] = first[excess:]
            self._tail_len -= len(dropped)
            self._cut_chars += len(dropped)
            self._cut_lines += dropped.count("\n")

    def _emit(self, text: str) -> None:
        if not text:
            return
        try:
            self._on_output(text)
        except Exception:
            log.exception("on_output failed; live output stops")
            self._streaming = False
        self._stream_ends_line = text.endswith("\n")

    def _emit_line(self, line: str) -> None:
        self._emit(("" if self._stream_ends_line else "\n") + line + "\n")
