"""Reading LSP base-protocol frames from stdin, with a cap on their size.

pygls' own reader trusts ``Content-Length``: it reads that many bytes at once (a claimed terabyte
is a ``MemoryError``, a 20-digit length an ``OverflowError``), and a header line without a
newline is read whole. This reader never holds more than :data:`MAX_FRAME_BYTES` of one body or
:data:`MAX_HEADER_LINE` bytes of one header line, and keeps serving after anything it cannot
read:

- a frame whose ``Content-Length`` is over the cap is answered -32600 (``id: null``) and its body
  is *not* read: the reader looks for the next ``Content-Length`` header, so a client that lied
  about a length is back in step with its next frame;
- header lines it does not know are skipped; the ``Content-Length`` header is found at the end of
  a line, so a frame that follows a body of the wrong length is still found;
- end of input (also in the middle of a body) ends the server.

The body is decoded on the reading thread (:meth:`server.transport.GatehouseProtocol.prepare`) and
dispatched on the event loop (:meth:`~server.transport.GatehouseProtocol.receive`).

Reading runs on a daemon thread (a blocked read never keeps the process alive at exit) and hands
each frame to the event loop, one at a time (the reader waits until the loop took it).
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import threading
from collections.abc import Callable
from typing import Any, BinaryIO

logger = logging.getLogger(__name__)

MAX_FRAME_BYTES = 16 * 1024 * 1024
"""The largest body the server reads (16 MiB); documented in docs/protocol.md."""

MAX_HEADER_LINE = 4096
"""Header lines longer than this are read in pieces; only their last 4 KiB are looked at."""

_CONTENT_LENGTH = re.compile(rb"content-length:[ \t]*(\d+)[ \t]*\r?\n?\Z", re.IGNORECASE)


class Oversized:
    """A frame whose ``Content-Length`` is over :data:`MAX_FRAME_BYTES` (its body is not read)."""

    def __init__(self, length: int | None) -> None:
        self.length = length
        """The claimed length; None when it has too many digits to be a number we keep."""


Frame = bytes | Oversized


class FrameReader:
    """Blocking: reads one frame at a time from a file descriptor.

    It reads the descriptor itself (``os.read``), not ``sys.stdin.buffer``: a daemon thread
    blocked inside a buffered reader holds its lock, and the interpreter aborts at exit when it
    cannot take that lock."""

    def __init__(self, fd: int, max_frame: int = MAX_FRAME_BYTES) -> None:
        self._fd = fd
        self._max = max_frame
        self._buffer = bytearray()
        self._eof = False

    def _fill(self) -> bool:
        """Read more input; False at the end of input."""
        if self._eof:
            return False
        chunk = os.read(self._fd, 65536)
        if not chunk:
            self._eof = True
            return False
        self._buffer += chunk
        return True

    def _take(self, count: int) -> bytes:
        data = bytes(self._buffer[:count])
        del self._buffer[:count]
        return data

    def _line(self) -> bytes | None:
        """The next header line (at most its last :data:`MAX_HEADER_LINE` bytes); None at EOF."""
        kept = b""
        while True:
            end = self._buffer.find(b"\n")
            if end != -1:
                return (kept + self._take(end + 1))[-MAX_HEADER_LINE:]
            if len(self._buffer) > MAX_HEADER_LINE:  # a long line: keep only its tail
                kept = (kept + self._take(len(self._buffer)))[-MAX_HEADER_LINE:]
            if not self._fill():
                return None

    def _body(self, length: int) -> bytes | None:
        while len(self._buffer) < length:
            if not self._fill():
                return None  # end of input in the middle of a body
        return self._take(length)

    def next_frame(self) -> Frame | None:
        """The next body, an :class:`Oversized` marker, or None at the end of input."""
        length: int | None = None
        oversized = False
        while True:
            line = self._line()
            if line is None:
                return None
            if not line.strip():
                if oversized:
                    return Oversized(length)
                if length is None:
                    continue  # a blank line with no header before it: nothing to read
                return self._body(length)
            match = _CONTENT_LENGTH.search(line)
            if match is None:
                continue  # another header (Content-Type) or garbage: skipped
            digits = match.group(1).lstrip(b"0") or b"0"
            if len(digits) > 18:
                length, oversized = None, True
            else:
                length = int(digits)
                oversized = length > self._max


async def serve_frames(
    stream: BinaryIO,
    prepare: Callable[[bytes], Any],
    receive: Callable[[Any], None],
    oversized: Callable[[Oversized], None],
) -> None:
    """Read frames on a daemon thread, ``prepare`` each body there (decoding), and hand the
    result to ``receive`` on this loop, until the end of input (cancel the task to stop
    earlier)."""
    loop = asyncio.get_running_loop()
    frames: asyncio.Queue[Any] = asyncio.Queue(maxsize=1)
    reader = FrameReader(stream.fileno())

    def read_all() -> None:
        frame: Frame | None = b""
        while frame is not None:
            try:
                frame = reader.next_frame()
            except Exception:  # a broken stdin: the same as its end
                logger.exception("reading stdin failed")
                frame = None
            item: Any = frame
            if isinstance(frame, bytes):
                item = _Prepared(prepare(frame))
            try:
                asyncio.run_coroutine_threadsafe(frames.put(item), loop).result()
            except (RuntimeError, asyncio.CancelledError):
                return  # the loop is gone: nobody is listening

    threading.Thread(target=read_all, name="gatehouse-stdin", daemon=True).start()
    while True:
        frame = await frames.get()
        if frame is None:
            logger.info("end of input: the client has gone")
            return
        if isinstance(frame, Oversized):
            oversized(frame)
            continue
        receive(frame.value)


class _Prepared:
    """A body as ``prepare`` left it."""

    def __init__(self, value: Any) -> None:
        self.value = value
