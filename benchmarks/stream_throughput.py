"""Stream throughput: a scripted model's tokens into a raw JSON-RPC reader.

Gatehouse: one ``agent/chat`` per run (tools disabled) whose scripted turn is ~20k BPE-like tokens
with no delay between them; measured from sending the request to its response: model tokens/s end
to end, ``agent/stream`` notifications/s, the mean delta size (tokens and characters per content
notification: coalescing merges tokens), and the first-delta latency (request to the first
``content`` notification).

Baseline, in the same run and with the same reader (``harness.connection.RpcClient``): the bare
pygls server (``benchmarks/baseline_server.py``) answering ``bench/flood`` by sending one
``agent/stream``-shaped notification per token of the same text, uncoalesced, as fast as it can.
Gatehouse tokens/s / baseline notifications/s says how close Gatehouse gets, per token, to the raw
transport cost of one notification. Runs alternate between the two servers.

    .venv/bin/python benchmarks/stream_throughput.py [--quick] [--json PATH]
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import _common as c

from engine.backends.scripted import split_into_tokens
from harness.connection import ErrorResponse, RpcClient

TARGET_TOKENS = 20_000

_VOCABULARY = """
the model reads a file and then writes a short answer about what it found in the code function
class module import return value error test server client request response stream token delta
notification editor workspace session turn tool call result python list files search pattern
line number change patch review approve deny run sandbox
"""
_WORDS: tuple[str, ...] = tuple(_VOCABULARY.split())


def make_text(tokens: int, seed: int = 7) -> str:
    """Deterministic prose of exactly ``tokens`` scripted-model tokens (words and punctuation)."""
    rng = random.Random(seed)
    parts: list[str] = ["The"]
    while len(parts) < tokens:
        roll = rng.random()
        if roll < 0.08 and not parts[-1].startswith((",", ".")):
            parts.append(rng.choice((",", ".")))
        else:
            parts.append(" " + rng.choice(_WORDS))
    text = "".join(parts)
    assert len(split_into_tokens(text)) == tokens
    return text


@dataclass
class Counter:
    """Counts ``agent/stream`` notifications as the reader dispatches them."""

    start: float = 0.0
    first_content: float | None = None
    notifications: int = 0
    content_notifications: int = 0
    content_chars: int = 0
    texts: list[str] = field(default_factory=list)

    def reset(self) -> None:
        self.start = time.perf_counter()
        self.first_content = None
        self.notifications = self.content_notifications = self.content_chars = 0
        self.texts = []

    def __call__(self, params: Any) -> None:
        self.notifications += 1
        if isinstance(params, dict) and params.get("type") == "content":
            if self.first_content is None:
                self.first_content = time.perf_counter()
            self.content_notifications += 1
            text = str(params.get("text", ""))
            self.content_chars += len(text)
            self.texts.append(text)


@dataclass
class Sample:
    seconds: float
    notifications: int
    content_notifications: int
    content_chars: int
    first_delta: float
    server_cpu: float


async def one_run(client: RpcClient, counter: Counter, method: str, params: Any) -> Sample:
    cpu_before = c.cpu_seconds(client.pid)
    counter.reset()
    result = await client.request(method, params)
    end = time.perf_counter()
    server_cpu = c.cpu_seconds(client.pid) - cpu_before
    assert isinstance(result, dict), result
    assert counter.first_content is not None
    return Sample(
        end - counter.start,
        counter.notifications,
        counter.content_notifications,
        counter.content_chars,
        counter.first_content - counter.start,
        server_cpu,
    )


async def start(argv: Sequence[str], counter: Counter, workspace: Path) -> RpcClient:
    client = RpcClient()
    await client.start(argv, env=c.child_env(), cwd=c.REPO_ROOT, stderr=c.server_stderr())
    client.on_notification("agent/stream", counter)
    await client.request("initialize", c.initialize_params(workspace))
    client.notify("initialized", {})
    return client


async def measure(runs: int, tmp: Path) -> tuple[int, list[Sample], list[Sample]]:
    text = make_text(TARGET_TOKENS)
    tokens = split_into_tokens(text)
    script = tmp / "script.json"
    # One turn per chat: a warm-up plus the measured runs.
    script.write_text(json.dumps({"turns": [text] * (runs + 1)}), encoding="utf-8")
    tokens_file = tmp / "tokens.json"
    tokens_file.write_text(json.dumps(tokens), encoding="utf-8")

    gh_counter, base_counter = Counter(), Counter()
    gatehouse = await start(
        (*c.GATEHOUSE_ARGV, "--backend", "scripted", "--script", str(script)), gh_counter, tmp
    )
    baseline = await start((*c.BASELINE_ARGV, "--tokens", str(tokens_file)), base_counter, tmp)
    chat = {"prompt": "go", "enableTools": False}
    gh_samples: list[Sample] = []
    base_samples: list[Sample] = []
    try:
        for i in range(runs + 1):
            pair = [
                (gatehouse, gh_counter, "agent/chat", chat, gh_samples),
                (baseline, base_counter, "bench/flood", {}, base_samples),
            ]
            if i % 2:
                pair.reverse()
            for client, counter, method, params, out in pair:
                sample = await one_run(client, counter, method, params)
                if client is gatehouse:
                    assert "".join(counter.texts) == text, "content deltas do not add up"
                else:
                    assert sample.content_notifications == len(tokens)
                if i > 0:  # the first run of each is a warm-up
                    out.append(sample)
    finally:
        await gatehouse.close()
        await baseline.close()
    return len(tokens), gh_samples, base_samples


def run(quick: bool) -> dict[str, Any]:
    runs = 5 if quick else 40
    with tempfile.TemporaryDirectory(prefix="gatehouse-bench-") as tmp:
        tokens, gh, base = asyncio.run(measure(runs, Path(tmp)))

    gh_tokens_s = c.summary([tokens / s.seconds for s in gh])
    gh_notes_s = c.summary([s.notifications / s.seconds for s in gh])
    gh_first = c.summary([s.first_delta for s in gh])
    gh_tokens_per_note = c.summary([tokens / s.content_notifications for s in gh])
    gh_chars_per_note = c.summary([s.content_chars / s.content_notifications for s in gh])
    gh_notes = c.summary([float(s.notifications) for s in gh])
    base_notes_s = c.summary([s.notifications / s.seconds for s in base])
    base_first = c.summary([s.first_delta for s in base])
    base_chars_per_note = c.summary([s.content_chars / s.content_notifications for s in base])
    ratio = gh_tokens_s["median"] / base_notes_s["median"]
    # CPU time is counted in clock ticks: summed over all runs, it is precise enough.
    gh_cpu = sum(s.server_cpu for s in gh) / (tokens * len(gh))
    base_cpu = sum(s.server_cpu for s in base) / sum(s.notifications for s in base)
    paired = c.summary(
        [
            (tokens / g.seconds) / (b.notifications / b.seconds)
            for g, b in zip(gh, base, strict=True)
        ]
    )
    headline = [
        ["stream: gatehouse tokens/s median", c.rate(gh_tokens_s["median"])],
        ["stream: gatehouse notifications/s median", c.rate(gh_notes_s["median"])],
        [
            "stream: mean delta size (tokens / chars)",
            f"{gh_tokens_per_note['median']:.0f} / {gh_chars_per_note['median']:.0f}",
        ],
        ["stream: bare pygls flood notifications/s median", c.rate(base_notes_s["median"])],
        ["stream: gatehouse tokens/s / bare pygls notifications/s", c.ratio(ratio)],
        [
            "stream: server CPU per token: gatehouse / bare pygls",
            f"{gh_cpu * 1e6:.1f} us / {base_cpu * 1e6:.1f} us ({c.ratio(gh_cpu / base_cpu)})",
        ],
        [
            "stream: first-delta latency, gatehouse median (p90)",
            f"{c.ms(gh_first['median'])} ({c.ms(gh_first['p90'])})",
        ],
        [
            "stream: first-delta latency, bare pygls median",
            c.ms(base_first["median"]),
        ],
    ]
    return {
        "benchmark": "stream_throughput",
        "machine": c.machine(),
        "quick": quick,
        "runs": runs,
        "tokens_per_run": tokens,
        "gatehouse": {
            "tokens_per_second": gh_tokens_s,
            "notifications_per_second": gh_notes_s,
            "notifications_per_run": gh_notes,
            "tokens_per_content_notification": gh_tokens_per_note,
            "chars_per_content_notification": gh_chars_per_note,
            "first_delta_seconds": gh_first,
            "run_seconds": c.summary([s.seconds for s in gh]),
        },
        "baseline": {
            "notifications_per_second": base_notes_s,
            "chars_per_notification": base_chars_per_note,
            "first_notification_seconds": base_first,
            "run_seconds": c.summary([s.seconds for s in base]),
        },
        "ratio_gatehouse_tokens_over_baseline_notifications": ratio,
        "server_cpu_seconds_per_token": {"gatehouse": gh_cpu, "baseline": base_cpu},
        "paired_ratio": paired,
        "headline": headline,
    }


def report(result: dict[str, Any]) -> str:
    gh, base = result["gatehouse"], result["baseline"]
    rows = [
        [
            "gatehouse agent/chat (tokens/s)",
            c.rate(gh["tokens_per_second"]["median"]),
            c.rate(gh["tokens_per_second"]["min"]),
            c.ms(gh["run_seconds"]["median"]),
            c.ms(gh["first_delta_seconds"]["median"]),
            c.ms(gh["first_delta_seconds"]["p90"]),
        ],
        [
            "gatehouse agent/chat (notifications/s)",
            c.rate(gh["notifications_per_second"]["median"]),
            c.rate(gh["notifications_per_second"]["min"]),
            "",
            "",
            "",
        ],
        [
            "bare pygls bench/flood (notifications/s)",
            c.rate(base["notifications_per_second"]["median"]),
            c.rate(base["notifications_per_second"]["min"]),
            c.ms(base["run_seconds"]["median"]),
            c.ms(base["first_notification_seconds"]["median"]),
            c.ms(base["first_notification_seconds"]["p90"]),
        ],
    ]
    per_note = gh["tokens_per_content_notification"]["median"]
    cpu = result["server_cpu_seconds_per_token"]
    chars = gh["chars_per_content_notification"]["median"]
    return "\n".join(
        [
            c.table(
                f"Stream throughput, {result['tokens_per_run']} tokens per run, "
                f"{result['runs']} runs each, raw reader",
                ["server", "median", "worst", "run", "1st delta", "1st p90"],
                rows,
            ),
            f"mean gatehouse delta: {per_note:.0f} tokens, {chars:.0f} chars per content "
            f"notification ({gh['notifications_per_run']['median']:.0f} notifications per run)",
            "gatehouse tokens/s / bare pygls notifications/s: "
            f"{c.ratio(result['ratio_gatehouse_tokens_over_baseline_notifications'])} "
            f"(paired runs: median {c.ratio(result['paired_ratio']['median'])})",
            f"server CPU per token: gatehouse {cpu['gatehouse'] * 1e6:.1f} us, bare pygls "
            f"{cpu['baseline'] * 1e6:.1f} us per notification "
            f"({c.ratio(cpu['gatehouse'] / cpu['baseline'])})",
        ]
    )


def main(argv: Sequence[str] | None = None) -> int:
    return c.script_main(__doc__, run, report, argv, errors=(ErrorResponse,))


if __name__ == "__main__":
    sys.exit(main())
