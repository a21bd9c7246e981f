"""Spawn overhead of each sandbox tier against a plain subprocess, in the same run.

Each sample runs `true` to completion through `sandbox.runner.execute` (the path every approved
command takes: scrubbed environment, cgroups where writable, limits, the tier's confinement) and
compares it with `asyncio.create_subprocess_exec("true")`. Tiers are interleaved round-robin so
machine noise hits them alike; medians and p90 are reported, with the difference to plain.

Every confined call also finds and records the workspace's auto-run paths before it runs and
checks them after (issue 8): the benchmark workspace is empty, so one more case runs the strong
tier in a workspace shaped like a project (a git repository, a nested one under
``node_modules``, ``.vscode``, 1,000 folders, 5,000 files, unchanged for 2 s before the runs)
to show what that costs there.

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


def _project(root: Path) -> Path:
    """A workspace shaped like a project (see the module docstring)."""
    for repo in (root, root / "node_modules" / "dep"):
        (repo / ".git" / "hooks").mkdir(parents=True)
        (repo / ".git" / "config").write_text("[core]\n\tbare = false\n")
        (repo / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
        for hook in ("pre-commit", "pre-push", "commit-msg"):
            (repo / ".git" / "hooks" / f"{hook}.sample").write_text("#!/bin/sh\n" * 40)
    (root / ".vscode").mkdir()
    (root / ".vscode" / "settings.json").write_text("{}")
    for i in range(1000):
        folder = root / "src" / f"pkg{i // 50}" / f"mod{i % 50}"
        folder.mkdir(parents=True)
        for j in range(5):
            (folder / f"f{j}.py").write_text("x = 1\n")
    return root


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
        if "strong" in tiers:
            project = _project(Path(tmp, "project"))
            os.sync()  # its write-back would otherwise land in the measurements
            await asyncio.sleep(2.1)  # older than autorun.SETTLE_NS, as a real project is
            cases["strong, project-shaped workspace"] = _through(tiers["strong"], project, scratch)
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
