"""Many sessions on one server: aggregate tokens/s of 16 sessions next to one session, in one run.

    .venv/bin/python benchmarks/many_sessions.py [--quick] [--json PATH]

Two models, each measured side by side in the same server:

- the scripted model (no delay: the server's own cost): one session streams ``turns`` long turns
  one after another; then 16 sessions stream one such turn each, all at once. Goal: the 16
  sessions' aggregate tokens/s >= 0.8x one session's.
- the embedded model (SmolLM2-135M, llama.cpp, one thread): one session generates ``turns``
  answers of ``maxTokens`` tokens; then 16 sessions one answer each, all at once (the model serves
  one model turn at a time, so they queue). Goal: aggregate >= 0.9x one session.

Both arms run in alternating rounds on the same server (5, or 3 with ``--quick``; their order
swapped every round); the report gives the median rates and the median of the rounds' ratios.

Also measured: how long ``agent/cancel`` of a queued turn takes to end that turn (the embedded
model busy with another session's long answer).
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import _common as c

from harness.connection import RpcClient

SESSIONS = 16


async def _start(args: Sequence[str], workspace: Path) -> RpcClient:
    client = RpcClient()
    await client.start([*c.GATEHOUSE_ARGV, *args], env=c.child_env(), stderr=c.server_stderr())
    await client.request("initialize", c.initialize_params(workspace))
    client.notify("initialized", {})
    return client


async def _chats(client: RpcClient, count: int, params: dict[str, Any]) -> tuple[float, list[Any]]:
    started = time.perf_counter()
    requests = [{**params, "prompt": f"{params['prompt']} ({i})"} for i in range(count)]
    results = await asyncio.gather(*(client.request("agent/chat", p) for p in requests))
    return time.perf_counter() - started, results


async def _sequential(
    client: RpcClient, count: int, params: dict[str, Any]
) -> tuple[float, list[Any]]:
    started = time.perf_counter()
    results = []
    for i in range(count):  # the same prompts as the parallel arm (no cache advantage)
        results.append(
            await client.request("agent/chat", {**params, "prompt": f"{params['prompt']} ({i})"})
        )
    return time.perf_counter() - started, results


async def _rounds(
    client: RpcClient, rounds: int, turns: int, params: dict[str, Any], count: Any
) -> dict[str, Any]:
    """``rounds`` rounds of both arms on one server, their order swapped every round (so drift
    of the machine's load favours neither): one session's ``turns`` turns one after another, and
    16 sessions' one turn each at once. Rates are tokens / wall time; the medians are reported,
    and the ratio is the median of each round's ratio."""
    ones: list[float] = []
    manys: list[float] = []
    for index in range(rounds):
        arms = ["one", "many"] if index % 2 == 0 else ["many", "one"]
        for arm in arms:
            if arm == "one":
                took, results = await _sequential(client, turns, params)
                ones.append(sum(count(r["text"]) for r in results) / took)
            else:
                took, results = await _chats(client, SESSIONS, params)
                manys.append(sum(count(r["text"]) for r in results) / took)
    ratios = [many / one for one, many in zip(ones, manys, strict=True)]
    return {
        "rounds": rounds,
        "one_session": statistics.median(ones),
        "sessions_16": statistics.median(manys),
        "ratio": statistics.median(ratios),
        "ratios": ratios,
    }


async def scripted(rounds: int, turns: int, tokens: int, tmp: Path) -> dict[str, Any]:
    from engine.backends.scripted import split_into_tokens

    text = " ".join(f"word{i % 97}" for i in range(tokens))
    count = len(split_into_tokens(text))
    script = tmp / "script.json"
    script.write_text(json.dumps({"turns": [text] * (rounds * (turns + SESSIONS) + 1)}))
    client = await _start(["--backend", "scripted", "--script", str(script)], tmp)
    try:
        params = {"prompt": "go", "enableTools": False}
        await client.request("agent/chat", params)  # warm-up
        result = await _rounds(client, rounds, turns, params, lambda _text: count)
    finally:
        await client.close()
    return {"tokens_per_turn": count, **result}


def _token_counter(model: Path) -> Any:
    from llama_cpp import Llama

    vocab = Llama(model_path=str(model), vocab_only=True, verbose=False)
    return lambda text: len(vocab.tokenize(text.encode(), add_bos=False, special=True))


async def embedded(rounds: int, turns: int, max_tokens: int, tmp: Path) -> dict[str, Any] | None:
    from engine.models import embedded_model

    model = embedded_model()
    if model is None:
        return None
    count = _token_counter(model)
    client = await _start(["--backend", "llama_cpp", "--threads", "1"], tmp)
    prompt = "Count from one to one hundred in words, one number per line."
    params = {"prompt": prompt, "enableTools": False, "maxTokens": max_tokens, "temperature": 0}
    try:
        await client.request("agent/chat", params)  # loads the model
        result = await _rounds(client, rounds, turns, params, count)
        cancels = [await _cancel_queued(client, params) for _ in range(5)]
    finally:
        await client.close()
    return {
        "max_tokens": max_tokens,
        **result,
        "cancel_queued_ms": statistics.median(cancels) * 1000,
    }


async def _cancel_queued(client: RpcClient, params: dict[str, Any]) -> float:
    streaming, queued_seen = asyncio.Event(), asyncio.Event()
    queued_session: list[str] = []

    def watch(event: dict[str, Any]) -> None:
        if event["type"] == "content":
            streaming.set()
        if event["type"] == "status" and "queued" in event["text"] and not queued_session:
            queued_session.append(event["sessionId"])
            queued_seen.set()

    client.on_notification("agent/stream", watch)
    long = asyncio.create_task(client.request("agent/chat", {**params, "maxTokens": 200}))
    await streaming.wait()
    queued = asyncio.create_task(client.request("agent/chat", {**params, "prompt": "queued"}))
    await queued_seen.wait()
    started = time.perf_counter()
    await client.request("agent/cancel", {"sessionId": queued_session[0]})
    result = await queued
    took = time.perf_counter() - started
    assert result["stopReason"] == "cancelled" and not long.done()
    await long
    return took


def run(quick: bool) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        rounds = 3 if quick else 5
        script = asyncio.run(scripted(rounds, 4 if quick else 8, 2000 if quick else 5000, tmp))
        model = asyncio.run(embedded(rounds, 4 if quick else 8, 24 if quick else 48, tmp))
    headline = [
        [
            "16 sessions vs 1, scripted stream (aggregate tokens/s)",
            f"{c.rate(script['sessions_16'])} vs {c.rate(script['one_session'])}: "
            f"{c.ratio(script['ratio'])}",
        ]
    ]
    if model is not None:
        headline.append(
            [
                "16 sessions vs 1, embedded model (aggregate tokens/s)",
                f"{model['sessions_16']:.1f} vs {model['one_session']:.1f}: "
                f"{c.ratio(model['ratio'])}",
            ]
        )
        headline.append(["agent/cancel of a queued turn", f"{model['cancel_queued_ms']:.1f} ms"])
    return {"machine": c.machine(), "scripted": script, "embedded": model, "headline": headline}


def report(result: dict[str, Any]) -> str:
    rows = []
    s = result["scripted"]
    rows.append(
        [
            "scripted stream (server cost)",
            c.rate(s["one_session"]),
            c.rate(s["sessions_16"]),
            c.ratio(s["ratio"]) + " (goal >= 0.8x)",
        ]
    )
    e = result["embedded"]
    if e is not None:
        rows.append(
            [
                "embedded model (SmolLM2-135M, 1 thread)",
                f"{e['one_session']:.1f} tokens/s",
                f"{e['sessions_16']:.1f} tokens/s",
                c.ratio(e["ratio"]) + " (goal >= 0.9x)",
            ]
        )
    text = c.table(
        f"Many sessions: aggregate tokens/s, 16 sessions at once vs one session (same server; "
        f"medians of {s['rounds']} alternating rounds)",
        ["model", "1 session", "16 sessions", "ratio"],
        rows,
    )
    if e is not None:
        took = e["cancel_queued_ms"]
        text += f"\nagent/cancel of a queued turn, until its response (median of 5): {took:.1f} ms"
    return text


def main(argv: Sequence[str] | None = None) -> int:
    return c.script_main(__doc__, run, report, argv)


if __name__ == "__main__":
    sys.exit(main())
