"""Blocking model generation streamed without blocking the loop, and stopped by a cancel."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator

import pytest

from engine.backends.base import Finish
from engine.backends.threaded import Generate, model_executor, stream_in_thread


def _slow_tokens(produced: list[str], total: int = 1000) -> Generate:
    def generate(stop: threading.Event) -> Iterator[str | Finish]:
        for i in range(total):
            if stop.is_set():
                return
            time.sleep(0.005)  # a token's worth of blocking work
            produced.append(f"t{i}")
            yield f"t{i} "
        yield Finish("stop")

    return generate


async def test_tokens_arrive_in_order_and_the_loop_stays_free() -> None:
    produced: list[str] = []
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.001)
            ticks += 1

    tick_task = asyncio.create_task(ticker())
    executor = model_executor("test")
    got = [item async for item in stream_in_thread(_slow_tokens(produced, 40), executor)]
    tick_task.cancel()
    assert got[-1] == Finish("stop")
    assert "".join(x for x in got if isinstance(x, str)) == "".join(f"t{i} " for i in range(40))
    assert ticks > 20  # the event loop ran while the model "generated"
    executor.shutdown()


async def test_cancel_stops_generation_within_a_token_and_waits_for_the_worker() -> None:
    produced: list[str] = []
    executor = model_executor("test")
    five_seen = asyncio.Event()

    async def consume() -> None:
        seen = 0
        async for _item in stream_in_thread(_slow_tokens(produced), executor):
            seen += 1
            if seen == 5:
                five_seen.set()

    task = asyncio.create_task(consume())
    await five_seen.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    count = len(produced)
    await asyncio.sleep(0.1)
    assert len(produced) == count  # nothing generated after the cancel returned
    assert count < 20
    # The single worker is free again: a new stream starts at once.
    assert [x async for x in stream_in_thread(_slow_tokens([], 2), executor)][-1] == Finish("stop")
    executor.shutdown()


async def test_a_failing_model_raises_in_the_consumer() -> None:
    def generate(stop: threading.Event) -> Iterator[str | Finish]:
        yield "partial"
        raise RuntimeError("model crashed")

    executor = model_executor("test")
    got: list[object] = []
    with pytest.raises(RuntimeError, match="model crashed"):
        async for item in stream_in_thread(generate, executor):
            got.append(item)
    assert got == ["partial"]
    executor.shutdown()
