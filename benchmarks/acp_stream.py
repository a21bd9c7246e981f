"""ACP mode against the LSP mode: the same scripted model's tokens through ``gatehouse acp``
(``session/prompt`` -> ``session/update`` over newline-delimited JSON) and ``gatehouse serve``
(``agent/chat`` -> ``agent/stream`` with LSP framing), side by side in one run.

Each run streams one ~20k-token scripted turn (no delay between tokens, tools disabled in both
modes as in ``stream_throughput.py``: ``enableTools: false``, for ACP in the prompt's
``_meta.gatehouse``) into a raw reader (``harness.connection.RpcClient`` for
LSP, a minimal NDJSON reader here for ACP: neither SDK's client is measured). Measured per run:
the server process's CPU time (``/proc``) per model token, and the first-delta latency (request
sent -> first ``content`` / ``agent_message_chunk`` read). Runs alternate between the two
servers. Goals (issue 13): ACP's server CPU per token <= 1.05 x LSP's, first delta <= LSP's +2 ms.

    .venv/bin/python benchmarks/acp_stream.py [--quick] [--json PATH]
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import _common as c
from stream_throughput import TARGET_TOKENS, make_text

from engine.backends.scripted import split_into_tokens
from harness.connection import ErrorResponse, RpcClient


@dataclass
class Sample:
    seconds: float
    first_delta: float
    server_cpu: float
    notifications: int


@dataclass
class Counter:
    start: float = 0.0
    first: float | None = None
    notifications: int = 0
    texts: list[str] = field(default_factory=list)

    def reset(self) -> None:
        self.start, self.first, self.notifications, self.texts = time.perf_counter(), None, 0, []

    def content(self, text: str) -> None:
        if self.first is None:
            self.first = time.perf_counter()
        self.notifications += 1
        self.texts.append(text)


class NdjsonClient:
    """A minimal ACP client: newline-delimited JSON-RPC, requests and notifications."""

    def __init__(self, on_update: Callable[[dict[str, Any]], None]) -> None:
        self._on_update = on_update
        self._next = 0
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self.proc: asyncio.subprocess.Process | None = None
        self._reader: asyncio.Task[None] | None = None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    async def start(self, argv: Sequence[str], cwd: Path) -> None:
        self.proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=c.server_stderr(),
            env=c.child_env(),
            cwd=cwd,
            limit=64 * 1024 * 1024,
        )
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        while line := await self.proc.stdout.readline():
            message = json.loads(line)
            if "method" in message:
                if message["method"] == "session/update":
                    self._on_update(message["params"]["update"])
                continue
            future = self._pending.pop(message["id"], None)
            if future is not None:
                if "error" in message:
                    future.set_exception(RuntimeError(str(message["error"])))
                else:
                    future.set_result(message.get("result"))

    async def request(self, method: str, params: Any) -> Any:
        assert self.proc is not None and self.proc.stdin is not None
        self._next += 1
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[self._next] = future
        line = {"jsonrpc": "2.0", "id": self._next, "method": method, "params": params}
        self.proc.stdin.write(json.dumps(line).encode() + b"\n")
        return await future

    async def close(self) -> None:
        if self.proc is not None:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.proc.wait(), 10)
            if self.proc.returncode is None:
                self.proc.kill()
                await self.proc.wait()
        if self._reader is not None:
            self._reader.cancel()


async def timed(pid: int | None, counter: Counter, call: Any) -> Sample:
    cpu_before = c.cpu_seconds(pid)
    counter.reset()
    await call
    end = time.perf_counter()
    assert counter.first is not None
    return Sample(
        end - counter.start,
        counter.first - counter.start,
        c.cpu_seconds(pid) - cpu_before,
        counter.notifications,
    )


async def measure(runs: int, tmp: Path) -> tuple[int, list[Sample], list[Sample]]:
    text = make_text(TARGET_TOKENS)
    tokens = len(split_into_tokens(text))
    script = tmp / "script.json"
    script.write_text(json.dumps({"turns": [text] * (runs + 1)}), encoding="utf-8")
    workspace = tmp / "ws"
    workspace.mkdir()
    flags = ("--backend", "scripted", "--script", str(script), "--workspace", str(workspace))

    lsp_counter, acp_counter = Counter(), Counter()
    lsp = RpcClient()
    await lsp.start((*c.GATEHOUSE_ARGV, *flags), env=c.child_env(), cwd=c.REPO_ROOT,
                    stderr=c.server_stderr())  # fmt: skip
    lsp.on_notification(
        "agent/stream",
        lambda p: lsp_counter.content(p["text"]) if p.get("type") == "content" else None,
    )
    await lsp.request("initialize", c.initialize_params(workspace, tool_confirm=True))
    lsp.notify("initialized", {})

    def on_update(update: dict[str, Any]) -> None:
        if update.get("sessionUpdate") == "agent_message_chunk":
            acp_counter.content(update["content"]["text"])

    acp = NdjsonClient(on_update)
    await acp.start((*c.GATEHOUSE_ARGV[:-1], "server", "acp", *flags), c.REPO_ROOT)
    await acp.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    session = (await acp.request("session/new", {"cwd": str(workspace), "mcpServers": []}))[
        "sessionId"
    ]

    lsp_samples: list[Sample] = []
    acp_samples: list[Sample] = []
    try:
        for i in range(runs + 1):
            chat = lsp.request("agent/chat", {"prompt": "go", "enableTools": False})
            prompt = acp.request(
                "session/prompt",
                {
                    "sessionId": session,
                    "prompt": [{"type": "text", "text": "go"}],
                    "_meta": {"gatehouse": {"enableTools": False}},
                },
            )
            pair = [
                (lsp.pid, lsp_counter, chat, lsp_samples),
                (acp.pid, acp_counter, prompt, acp_samples),
            ]
            if i % 2:
                pair.reverse()
            for pid, counter, call, out in pair:
                sample = await timed(pid, counter, call)
                assert "".join(counter.texts) == text, "content deltas do not add up"
                if i > 0:  # the first run of each is a warm-up
                    out.append(sample)
    finally:
        await lsp.close()
        await acp.close()
    return tokens, lsp_samples, acp_samples


def run(quick: bool) -> dict[str, Any]:
    runs = 5 if quick else 30
    with tempfile.TemporaryDirectory(prefix="gatehouse-bench-") as tmp:
        tokens, lsp, acp = asyncio.run(measure(runs, Path(tmp)))
    # CPU time is counted in clock ticks: summed over all runs, it is precise enough.
    lsp_cpu = sum(s.server_cpu for s in lsp) / (tokens * len(lsp))
    acp_cpu = sum(s.server_cpu for s in acp) / (tokens * len(acp))
    lsp_first = c.summary([s.first_delta for s in lsp])
    acp_first = c.summary([s.first_delta for s in acp])
    paired_first = c.summary([a.first_delta - b.first_delta for a, b in zip(acp, lsp, strict=True)])
    cpu_ratio = acp_cpu / lsp_cpu
    first_delta_added = acp_first["median"] - lsp_first["median"]
    headline = [
        [
            "acp: server CPU per token, ACP / LSP",
            f"{acp_cpu * 1e6:.1f} us / {lsp_cpu * 1e6:.1f} us ({c.ratio(cpu_ratio)}; goal <= 1.05)",
        ],
        [
            "acp: first delta, ACP / LSP median",
            f"{c.ms(acp_first['median'])} / {c.ms(lsp_first['median'])} "
            f"({first_delta_added * 1e3:+.2f} ms; paired median "
            f"{paired_first['median'] * 1e3:+.2f} ms; goal <= +2 ms)",
        ],
    ]
    return {
        "benchmark": "acp_stream",
        "machine": c.machine(),
        "quick": quick,
        "runs": runs,
        "tokens_per_run": tokens,
        "lsp": {
            "server_cpu_seconds_per_token": lsp_cpu,
            "first_delta_seconds": lsp_first,
            "run_seconds": c.summary([s.seconds for s in lsp]),
            "notifications_per_run": c.summary([float(s.notifications) for s in lsp]),
        },
        "acp": {
            "server_cpu_seconds_per_token": acp_cpu,
            "first_delta_seconds": acp_first,
            "run_seconds": c.summary([s.seconds for s in acp]),
            "notifications_per_run": c.summary([float(s.notifications) for s in acp]),
        },
        "cpu_ratio_acp_over_lsp": cpu_ratio,
        "first_delta_added_seconds": first_delta_added,
        "paired_first_delta_difference_seconds": paired_first,
        "headline": headline,
    }


def report(result: dict[str, Any]) -> str:
    rows = []
    for name in ("lsp", "acp"):
        r = result[name]
        rows.append(
            [
                "gatehouse serve (LSP)" if name == "lsp" else "gatehouse acp (ACP)",
                f"{r['server_cpu_seconds_per_token'] * 1e6:.1f} us",
                c.ms(r["first_delta_seconds"]["median"]),
                c.ms(r["first_delta_seconds"]["p90"]),
                c.ms(r["run_seconds"]["median"]),
                f"{r['notifications_per_run']['median']:.0f}",
            ]
        )
    return "\n".join(
        [
            c.table(
                f"ACP vs LSP, {result['tokens_per_run']} tokens per run, {result['runs']} runs "
                "each, alternating, raw readers",
                ["server", "CPU/token", "1st delta", "1st p90", "run", "notes/run"],
                rows,
            ),
            *(f"{k}: {v}" for k, v in result["headline"]),
        ]
    )


def main(argv: Sequence[str] | None = None) -> int:
    return c.script_main(__doc__, run, report, argv, errors=(ErrorResponse, RuntimeError))


if __name__ == "__main__":
    sys.exit(main())
