"""Streaming from a blocking generator (llama.cpp, transformers) without blocking the event loop.

The generator runs in an executor owned by the backend; each delta is handed to the event loop
with ``call_soon_threadsafe``. Cancelling the consuming task sets a stop flag that the generator
checks once per token, so generation stops within one token's time, and the consumer waits for
the worker to finish before the cancellation propagates (the model is free for the next request).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import AsyncGenerator, Callable, Iterator
from concurrent.futures import Executor, ThreadPoolExecutor

from engine.backends.base import Finish, Notice

logger = logging.getLogger(__name__)

_DONE = object()

Generate = Callable[[threading.Event], Iterator[str | Notice | Finish]]
"""A blocking generator of deltas; it must check the event once per token and stop when set."""


def model_executor(name: str) -> ThreadPoolExecutor:
    """One worker: a model generates one stream at a time."""
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"gatehouse-{name}")


async def stream_in_thread(
    generate: Generate, executor: Executor
) -> AsyncGenerator[str | Notice | Finish, None]:
    """Run ``generate`` in ``executor`` and yield its deltas on the event loop."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[object] = asyncio.Queue()
    stop = threading.Event()

    def put(item: object) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is listening
            loop.call_soon_threadsafe(queue.put_nowait, item)

    def work() -> None:
        try:
            for item in generate(stop):
                put(item)
                if stop.is_set():
                    break
        except BaseException as exc:  # handed to the consumer, raised there
            put(exc)
        finally:
            put(_DONE)

    worker = loop.run_in_executor(executor, work)
    try:
        while True:
            item = await queue.get()
            if item is _DONE:
                break
            if isinstance(item, BaseException):
                raise item
            assert isinstance(item, str | Notice | Finish)
            yield item
    finally:
        stop.set()
        # Wait for the worker so the model is free again; shield it from a second cancel.
        with contextlib.suppress(Exception):
            await asyncio.shield(worker)
