"""Spawn overhead of each sandbox tier against a plain subprocess, in the same run.

Each sample runs `true` to completion through `sandbox.runner.execute` (the path every approved
command takes: scrubbed environment, cgroups where writable, limits, the tier's confinement) and
compares it with `asyncio.create_subprocess_exec("true")`. Tiers are interleaved round-robin so
machine noise hits them alike; medians and p90 are reported, with the difference to plain.

    .venv/bin/python benchmarks/sandbox_overhead.py [--quick] [--json PATH]
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from statistics import median

from _common import machine, ms, p90, parser, table, write_json

from sandbox.probe import build_tier, probe
from sandbox.runner import ExecRequest, execute
from sandbox.tiers import Sandbox


async def _plain() -> None:
    proc = await asyncio.create_subprocess_exec("true")
    await proc.wait()


def _through(sandbox: Sandbox, ws: Path, scratch: Path) -> Callable[[], Awaitable[None]]:
    request = ExecRequest(("true",), ws, 30, scratch_dir=scratch)

    async def run() -> None:
        result = await execute(request, sandbox=sandbox)
        assert result.exit_code == 0, result.output

    return run


def _tiers() -> dict[str, Sandbox]:
    """Every tier that works here, each as the server would configure it (with cgroups)."""
    trees = probe().sandbox.trees
    tiers: dict[str, Sandbox] = {}
    for level in ("strong", "standard", "limits-only"):
        sandbox, _detail = build_tier(level)
        if sandbox is not None:
            tiers[level] = replace(sandbox, trees=trees)
            if level == "strong":
                tiers["strong without cgroups"] = replace(sandbox, trees=[])
    return tiers


async def main() -> None:
    args = parser(__doc__ or "").parse_args()
    runs = 15 if args.quick else 60
    tiers = _tiers()
    with tempfile.TemporaryDirectory(prefix="gatehouse-bench-") as tmp:
        ws, scratch = Path(tmp, "ws"), Path(tmp, "scratch")
        for folder in (ws, scratch):
            os.mkdir(folder)  # a benchmark's setup: blocking is fine here
        cases: dict[str, Callable[[], Awaitable[None]]] = {"plain subprocess": _plain}
        cases |= {name: _through(sb, ws, scratch) for name, sb in tiers.items()}
        samples: dict[str, list[float]] = {name: [] for name in cases}
        for _warm in range(2):
            for run in cases.values():
                await run()
        for i in range(runs):
            names = list(cases)
            names = names[i % len(names) :] + names[: i % len(names)]  # rotate the order
            for name in names:
                started = time.perf_counter()
                await cases[name]()
                samples[name].append(time.perf_counter() - started)
    plain = median(samples["plain subprocess"])
    rows = []
    results = {}
    for name, values in samples.items():
        med = median(values)
        rows.append(
            [
                name,
                ms(med),
                ms(p90(values)),
                "" if name == "plain subprocess" else f"+{(med - plain) * 1000:.1f} ms",
            ]
        )
        results[name] = {"median_s": med, "p90_s": p90(values), "overhead_s": med - plain}
    print(
        table(
            f"spawn overhead per tier ({runs} runs each, interleaved)",
            ["launch", "median", "p90", "vs plain"],
            rows,
        )
    )
    if args.json:
        write_json(args.json, {"machine": machine(), "runs": runs, "results": results})


if __name__ == "__main__":
    asyncio.run(main())
