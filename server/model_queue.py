"""One local model, many sessions: model turns take the model one at a time, first come first
served.

A local model (llama.cpp, transformers) generates one stream at a time. Every *model turn* (one
call of the backend's ``stream``: the model writing an answer or a tool call) waits for the model
in one FIFO queue shared by all sessions. The model is released as soon as that model turn ends:
while a tool runs or an approval waits, other sessions generate, and the next model turn of the
same request queues again at the back. So a request with many rounds of tool calls never starves
the others (round-robin between model turns); one model turn is bounded by ``maxTokens``.

A waiting turn is told its place (a ``status`` event, again whenever it moves up), and a cancel
while it waits takes it out of the queue at once.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager

from engine.backends.base import Backend, Finish, GenerationOptions, Message, Notice, ToolSpec

Place = Callable[[int], None]
"""Told how many model turns are ahead (1: the model is busy with one other)."""


def waiting_text(ahead: int) -> str:
    """The ``status`` text of a queued turn."""
    others = "1 other model turn" if ahead == 1 else f"{ahead} other model turns"
    return f"Waiting for the model: {others} ahead of this one (queued, place {ahead + 1})."


class ModelQueue:
    """A fair (FIFO) lock on one model, with the place of every waiter."""

    def __init__(self) -> None:
        self._busy = False
        self._waiters: collections.deque[tuple[asyncio.Future[None], Place]] = collections.deque()

    @property
    def waiting(self) -> int:
        return len(self._waiters)

    def _announce(self) -> None:
        for ahead, (future, tell) in enumerate(self._waiters, start=1):
            if not future.done():
                tell(ahead)

    def _release(self) -> None:
        while self._waiters:
            future, _tell = self._waiters.popleft()
            if not future.done():
                future.set_result(None)  # the model passes on; it stays busy
                self._announce()
                return
        self._busy = False

    @asynccontextmanager
    async def turn(self, tell: Place) -> AsyncIterator[None]:
        """Hold the model for one model turn; wait in line (told the place) when it is busy."""
        if self._busy or self._waiters:
            future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            entry = (future, tell)
            self._waiters.append(entry)
            tell(len(self._waiters))
            try:
                await future
            except asyncio.CancelledError:
                if future.done() and not future.cancelled():
                    self._release()  # granted just as it was cancelled: pass it on
                else:
                    self._waiters.remove(entry)
                    self._announce()
                raise
        else:
            self._busy = True
        try:
            yield
        finally:
            self._release()


class QueuedBackend(Backend):
    """``backend`` for one request: each model turn waits for its place in ``queue``."""

    def __init__(self, backend: Backend, queue: ModelQueue, tell: Place) -> None:
        self.inner = backend
        self.name = backend.name
        self.model = backend.model
        self._queue = queue
        self._tell = tell

    async def stream(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        options: GenerationOptions,
    ) -> AsyncGenerator[str | Notice | Finish, None]:
        async with self._queue.turn(self._tell):
            stream = self.inner.stream(messages, tools, options)
            try:
                async for item in stream:
                    yield item
            finally:
                await stream.aclose()
