"""Cold start: spawn a server and wait for its ``initialize`` result.

Three contenders, interleaved run by run so that machine noise hits them alike:

(a) ``gatehouse serve`` as both shipped clients start it (``python -P -m server --workspace DIR``:
    the VS Code client and ``gatehouse chat`` pass the folder, so the sandbox probe runs while
    the server loads),
(b) a bare pygls ``LanguageServer`` with no features (``benchmarks/baseline_server.py``): what
    pygls alone costs, the real alternative,
(c) ``python -c pass``: the interpreter floor (spawn to exit).

Reports median and p90 per contender and the ratio a/b of medians. It also checks, in a separate
interpreter, that building the server imports none of the heavy agent dependencies.

    .venv/bin/python benchmarks/cold_start.py [--quick] [--json PATH]
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import _common as c

from harness.connection import ErrorResponse, RpcClient

HEAVY_MODULES = ("torch", "transformers", "llama_cpp")
_WORKSPACE = Path(tempfile.mkdtemp(prefix="gatehouse-bench-ws-"))

_HEAVY_CHECK = (
    "import json, sys, server.app\n"
    "server.app.create_server()\n"
    f"print(json.dumps(sorted(m for m in {HEAVY_MODULES!r} if m in sys.modules)))\n"
)


async def spawn_to_initialize(argv: Sequence[str]) -> float:
    """Seconds from spawning ``argv`` to the ``initialize`` result (then shut it down, untimed)."""
    client = RpcClient()
    start = time.perf_counter()
    await client.start(argv, env=c.child_env(), cwd=c.REPO_ROOT, stderr=c.server_stderr())
    result = await client.request("initialize", c.initialize_params())
    elapsed = time.perf_counter() - start
    assert isinstance(result, dict) and "capabilities" in result, result
    client.notify("initialized", {})
    await client.close()
    return elapsed


async def spawn_to_exit(argv: Sequence[str]) -> float:
    start = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(*argv, stdin=subprocess.DEVNULL)
    code = await proc.wait()
    elapsed = time.perf_counter() - start
    assert code == 0, code
    return elapsed


CONTENDERS: dict[str, tuple[str, Callable[[], Awaitable[float]]]] = {
    "gatehouse": (
        "gatehouse serve -> initialize",
        lambda: spawn_to_initialize((*c.GATEHOUSE_ARGV, "--workspace", str(_WORKSPACE))),
    ),
    "pygls": ("bare pygls -> initialize", lambda: spawn_to_initialize(c.BASELINE_ARGV)),
    "python": ("python -c pass (floor)", lambda: spawn_to_exit((sys.executable, "-c", "pass"))),
}


def heavy_modules_loaded() -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", _HEAVY_CHECK],
        capture_output=True,
        text=True,
        check=False,
        cwd=c.REPO_ROOT,
        env=c.child_env(),
    )
    if out.returncode != 0:
        raise RuntimeError(f"the heavy-module check failed:\n{out.stderr.strip()}")
    loaded = json.loads(out.stdout.strip().splitlines()[-1])
    assert isinstance(loaded, list)
    return [str(m) for m in loaded]


async def measure(runs: int) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {key: [] for key in CONTENDERS}
    for _key, (_label, run) in CONTENDERS.items():
        await run()  # warm-up: .pyc caches and page cache, not counted
    keys = list(CONTENDERS)
    for i in range(runs):
        # Rotate the order so no contender always runs right after the same neighbour.
        for key in keys[i % len(keys) :] + keys[: i % len(keys)]:
            samples[key].append(await CONTENDERS[key][1]())
    return samples


def run(quick: bool) -> dict[str, Any]:
    runs = 5 if quick else 20
    samples = asyncio.run(measure(runs))
    stats = {key: c.summary(values) for key, values in samples.items()}
    gh, bare, floor = (stats[k]["median"] for k in ("gatehouse", "pygls", "python"))
    heavy = heavy_modules_loaded()
    ratio_ab = gh / bare
    headline = [
        ["cold start: gatehouse median (p90)", f"{c.ms(gh)} ({c.ms(stats['gatehouse']['p90'])})"],
        ["cold start: bare pygls median (p90)", f"{c.ms(bare)} ({c.ms(stats['pygls']['p90'])})"],
        ["cold start: python -c pass median", c.ms(floor)],
        ["cold start: gatehouse / bare pygls", c.ratio(ratio_ab)],
        ["heavy modules after create_server()", ", ".join(heavy) or "none"],
    ]
    return {
        "benchmark": "cold_start",
        "machine": c.machine(),
        "quick": quick,
        "runs": runs,
        "unit": "seconds",
        "samples": samples,
        "stats": stats,
        "ratio_gatehouse_over_pygls": ratio_ab,
        "ratio_gatehouse_over_python": gh / floor,
        "heavy_modules_loaded": heavy,
        "headline": headline,
    }


def report(result: dict[str, Any]) -> str:
    stats = result["stats"]
    bare = stats["pygls"]["median"]
    rows = [
        [
            label,
            c.ms(stats[key]["median"]),
            c.ms(stats[key]["p90"]),
            c.ms(stats[key]["min"]),
            c.ratio(stats[key]["median"] / bare),
        ]
        for key, (label, _run) in CONTENDERS.items()
    ]
    heavy = ", ".join(result["heavy_modules_loaded"]) or "none (expected)"
    return (
        c.table(
            f"Cold start, spawn to initialize result ({result['runs']} runs each, interleaved)",
            ["contender", "median", "p90", "min", "vs pygls"],
            rows,
        )
        + f"\nheavy modules after create_server(): {heavy}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    return c.script_main(__doc__, run, report, argv, errors=(ErrorResponse, RuntimeError))


if __name__ == "__main__":
    sys.exit(main())
