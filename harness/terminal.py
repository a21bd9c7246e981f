"""Reading the person's answers at the terminal without ever blocking the event loop."""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading

try:
    import termios
except ImportError:  # Windows: no terminal discipline to flush
    termios = None  # type: ignore[assignment]


class LineReader:
    """Reads lines from a file descriptor in a helper thread, one read at a time, on demand.

    The event loop never blocks on the terminal, so a withdrawn approval prompt can simply stop
    waiting. On a terminal, a line that arrives when nobody is asking any more is dropped: an
    answer typed for a withdrawn prompt must not answer the next one.
    """

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self.is_tty = os.isatty(fd)
        self._buffer = b""
        self._eof = False
        self._reading = False
        self._waiter: asyncio.Future[str | None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def discard_typeahead(self) -> None:
        """Forget anything typed before a question was shown."""
        if self.is_tty:
            self._buffer = b""
            if termios is not None:
                with contextlib.suppress(OSError, termios.error):
                    termios.tcflush(self._fd, termios.TCIFLUSH)

    async def readline(self) -> str | None:
        """The next line without its newline; None at end of input."""
        line = self._take(final=self._eof)
        if line is not None or self._eof:
            return line
        self._loop = asyncio.get_running_loop()
        waiter: asyncio.Future[str | None] = self._loop.create_future()
        self._waiter = waiter
        if not self._reading:
            self._reading = True
            threading.Thread(target=self._read, name="stdin-reader", daemon=True).start()
        try:
            return await waiter
        finally:
            if self._waiter is waiter:
                self._waiter = None

    def _take(self, *, final: bool) -> str | None:
        if b"\n" in self._buffer:
            raw, self._buffer = self._buffer.split(b"\n", 1)
        elif final and self._buffer:
            raw, self._buffer = self._buffer, b""
        else:
            return None
        return raw.decode("utf-8", errors="replace").rstrip("\r")

    def _read(self) -> None:  # in the helper thread
        try:
            data = os.read(self._fd, 4096)
        except OSError:
            data = b""
        loop = self._loop
        if loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop is gone: we are exiting
                loop.call_soon_threadsafe(self._received, data)

    def _received(self, data: bytes) -> None:
        self._reading = False
        self._eof = self._eof or not data
        waiter = self._waiter
        if waiter is None or waiter.done():
            if self.is_tty:
                self._buffer = b""
            else:
                self._buffer += data
            return
        self._buffer += data
        line = self._take(final=self._eof)
        if line is not None or self._eof:
            waiter.set_result(line)
        else:
            self._reading = True
            threading.Thread(target=self._read, name="stdin-reader", daemon=True).start()
