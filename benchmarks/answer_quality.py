"""Answer quality: does the embedded model's answer after a tool result state the real numbers?

The demo question ("How many lines are in each Python file here? Use the terminal.") in a copy of
``examples/demo-workspace``, asked of the real server (``python -m server --backend llama_cpp
--threads 1``, the embedded SmolLM2-135M-Instruct) over stdio, as ``make demo`` asks it: the
server's defaults for the model, the tool call approved (``allow``) when the server asks, the
command run in the sandbox. One new session per seed, seeds 0..N-1.

An answer is **right** when it names every real line count of the tool's output (9 and 11) and no
number that the output does not contain (the total, 20, may appear); it **leaks markup** when its
text holds any tool-call markup (``<tool_call>``, ``</tool_response>``, ...). Each seed's tool
call is recorded too (an answer can only be right after ``wc -l`` ran).

``--temperature``: the demo sends none (the server's default: greedy, so every seed gives the same
answer); the benchmark also runs at 0.7 by default to show how robust the answer is when sampled.
These are measurements, not tests: nothing fails.

    .venv/bin/python benchmarks/answer_quality.py [--quick] [--json PATH] [--seeds N]
        [--temperatures 0,0.7] [--extra-args "--tool-grammar --tools terminal"]
"""

from __future__ import annotations

import asyncio
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import _common as c

from harness.connection import ErrorResponse, RpcClient

QUESTION = "How many lines are in each Python file here? Use the terminal."
DEMO_WORKSPACE = c.REPO_ROOT / "examples" / "demo-workspace"
MARKUP = re.compile(
    r"</?tool_call>|</?tool_response>|<\|python_tag\|>|\[TOOL_CALLS\]|<function=|"
    r"</?(start|end)_function_call>|<\|eo[mt]_id\|>|<\|im_(start|end)\|>"
)
NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w])")


@dataclass
class Run:
    seed: int
    temperature: float | None
    commands: list[str]
    tool_statuses: list[str]
    output: str
    answer: str
    right: bool
    markup: bool
    stop_reason: str
    seconds: float


def expected_counts(output: str) -> tuple[set[str], set[str]]:
    """The per-file counts (required) and every number in the output (allowed)."""
    required = {m.group(1) for m in re.finditer(r"^\s*(\d+)\s+(?!total\b)\S+", output, re.M)}
    return required, set(NUMBER.findall(output))


def judge(answer: str, output: str) -> bool:
    required, allowed = expected_counts(output)
    if not required:
        return False  # the command did not count lines: the answer cannot state them
    numbers = set(NUMBER.findall(answer))
    return required <= numbers <= allowed


async def ask(
    client: RpcClient, seed: int, temperature: float | None, tools: Sequence[str] | None
) -> Run:
    events: list[dict[str, Any]] = []
    client.on_notification("agent/stream", events.append)
    params: dict[str, Any] = {"prompt": QUESTION, "seed": seed}
    if tools is not None:
        params["enabledTools"] = list(tools)
    if temperature is not None:
        params["temperature"] = temperature
    started = time.perf_counter()
    result = await client.request("agent/chat", params)
    seconds = time.perf_counter() - started
    commands = [
        str(call["arguments"].get("command", call["arguments"])) for call in result["toolCalls"]
    ]
    ends = [e for e in events if e.get("type") == "tool_end"]
    output = "\n".join(e["result"] for e in ends if e.get("status") == "completed")
    answer = result["text"]
    return Run(
        seed=seed,
        temperature=temperature,
        commands=commands,
        tool_statuses=[call["status"] for call in result["toolCalls"]],
        output=output,
        answer=answer,
        right=judge(answer, output),
        markup=bool(MARKUP.search(answer)),
        stop_reason=result["stopReason"],
        seconds=seconds,
    )


async def measure(
    seeds: int,
    temperatures: Sequence[float | None],
    extra: Sequence[str],
    tools: Sequence[str] | None,
) -> dict[str, list[dict[str, Any]]]:
    workspace = Path(tempfile.mkdtemp(prefix="gatehouse-answer-"))
    for source in DEMO_WORKSPACE.iterdir():
        shutil.copy(source, workspace / source.name)
    client = RpcClient()
    client.on_request("toolConfirm", lambda _params: _allow())
    argv = [*c.GATEHOUSE_ARGV, "--backend", "llama_cpp", "--threads", "1", *extra]
    await client.start(argv, env=c.child_env(), stderr=c.server_stderr())
    try:
        await client.request("initialize", c.initialize_params(workspace, tool_confirm=True))
        client.notify("initialized", {})
        runs: dict[str, list[Run]] = {}
        for temperature in temperatures:
            key = "server default" if temperature is None else f"{temperature:g}"
            runs[key] = []
            for seed in range(seeds):
                run = await ask(client, seed, temperature, tools)
                runs[key].append(run)
                mark = "right" if run.right else "WRONG"
                shown = f"  T={key} seed {seed:2d}: {mark} {run.commands} {run.answer[:90]!r}"
                print(shown, file=sys.stderr)
        return {key: [asdict(r) for r in value] for key, value in runs.items()}
    finally:
        await client.close()
        shutil.rmtree(workspace, ignore_errors=True)


async def _allow() -> dict[str, str]:
    return {"decision": "allow"}


def summarise(runs: list[dict[str, Any]]) -> dict[str, Any]:
    answers = {r["answer"] for r in runs}
    return {
        "right": sum(r["right"] for r in runs),
        "markup": sum(r["markup"] for r in runs),
        "ran_wc": sum(any(cmd.startswith("wc") for cmd in r["commands"]) for r in runs),
        "n": len(runs),
        "distinct_answers": len(answers),
        "median_seconds": c.summary([r["seconds"] for r in runs])["median"],
    }


def run(
    quick: bool,
    seeds: int = 20,
    temperatures: Sequence[float | None] = (None, 0.7),
    extra: Sequence[str] = (),
    tools: Sequence[str] | None = None,
) -> dict[str, Any]:
    seeds = 5 if quick else seeds
    started = time.perf_counter()
    runs = asyncio.run(measure(seeds, temperatures, extra, tools))
    return {
        "benchmark": "answer_quality",
        "machine": c.machine(),
        "question": QUESTION,
        "server_args": ["--backend", "llama_cpp", "--threads", "1", *extra],
        "enabled_tools": tools,
        "seeds": seeds,
        "summary": {key: summarise(value) for key, value in runs.items()},
        "runs": runs,
        "wall_seconds": time.perf_counter() - started,
    }


def report(result: dict[str, Any]) -> str:
    rows = []
    for key, s in result["summary"].items():
        rows.append(
            [
                key,
                f"{s['right']}/{s['n']}",
                f"{s['markup']}/{s['n']}",
                f"{s['ran_wc']}/{s['n']}",
                str(s["distinct_answers"]),
                c.ms(s["median_seconds"]),
            ]
        )
    tools = result["enabled_tools"]
    table = c.table(
        f"Answer quality: the demo question, embedded model, {result['seeds']} seeds "
        f"(server args: {' '.join(result['server_args'])}; "
        f"enabledTools: {','.join(tools) if tools else 'server default'})",
        ["temperature", "right", "markup", "ran wc -l", "distinct", "median turn"],
        rows,
    )
    lines = [table]
    for key, runs in result["runs"].items():
        example = next((r for r in runs if not r["right"]), None)
        if example is not None:
            lines.append(
                f"a wrong answer at T={key} (seed {example['seed']}): {example['answer'][:160]!r}"
            )
    lines.append(f"wall time {result['wall_seconds']:.0f} s")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = c.parser((__doc__ or "").splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument(
        "--temperatures",
        default="default,0.7",
        help="comma-separated; 'default' sends none (what make demo does)",
    )
    parser.add_argument("--extra-args", default="", help="more gatehouse serve arguments")
    parser.add_argument("--tools", help="comma-separated enabledTools (default: the server's)")
    args = parser.parse_args(argv)
    temperatures = [None if t == "default" else float(t) for t in args.temperatures.split(",")]
    tools = args.tools.split(",") if args.tools else None
    try:
        result = run(args.quick, args.seeds, temperatures, args.extra_args.split(), tools)
    except (ErrorResponse, RuntimeError, OSError) as exc:
        return c.server_failed(exc)
    print(report(result))
    if args.json:
        c.write_json(args.json, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
