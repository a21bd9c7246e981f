"""Run every benchmark (each in its own interpreter) and print one combined table.

    .venv/bin/python benchmarks/run_all.py [--quick] [--json [PATH]]

``--quick`` is passed through. ``--json`` writes the combined results to
``benchmarks/results.json`` (or to PATH); without it nothing is written.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import _common as c

BENCHMARKS: tuple[str, ...] = (
    "cold_start",
    "stream_throughput",
    "confirm_roundtrip",
    "many_sessions",
    "memory",
)
DEFAULT_JSON = c.BENCH_DIR / "results.json"


def run_one(name: str, quick: bool, tmp: Path) -> dict[str, Any]:
    out = tmp / f"{name}.json"
    argv = [sys.executable, str(c.BENCH_DIR / f"{name}.py"), "--json", str(out)]
    if quick:
        argv.append("--quick")
    print(f"== {name}{' (quick)' if quick else ''}", flush=True)
    start = time.perf_counter()
    subprocess.run(argv, check=True, cwd=c.REPO_ROOT)
    print(f"   ({time.perf_counter() - start:.1f} s)\n", flush=True)
    data = json.loads(out.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="fewer iterations in every benchmark")
    p.add_argument(
        "--json",
        nargs="?",
        const=str(DEFAULT_JSON),
        metavar="PATH",
        help=f"write the combined results (default path: {DEFAULT_JSON.relative_to(c.REPO_ROOT)})",
    )
    args = p.parse_args(argv)
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="gatehouse-bench-") as tmp:
        for name in BENCHMARKS:
            results[name] = run_one(name, args.quick, Path(tmp))
    rows = [list(row) for name in BENCHMARKS for row in results[name]["headline"]]
    info = c.machine()
    print(
        c.table(
            f"Gatehouse benchmarks ({'quick' if args.quick else 'full'}; {info['date']}, "
            f"Python {info['python']}, {info['cpus']} CPUs)",
            ["measure", "result"],
            rows,
        )
    )
    if args.json:
        c.write_json(args.json, {"machine": info, "quick": args.quick, "results": results})
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
