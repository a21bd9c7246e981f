"""``search_files`` over a 10,000-file workspace: today's implementation against the one before
issue 8 (kept in ``_old_search.py``), in the same run, on the same tree.

Today's walks and opens by descriptor and matches with the ``regex`` module (a time limit on
every match, the GIL released); the old one checked paths, opened them by name and matched with
``re``. Both run the blocking search function directly (what the tool runs in a worker thread),
interleaved and rotated, after a warm-up that fills the page cache. The goal: no slower than
1.5x the old one.

It also times what every approved command now pays before and after it runs at a confined level:
finding and recording the workspace's auto-run paths (``WorkspaceGuard.before`` + ``after``) on
the same tree (551 folders, with a git repository and ``.vscode`` added), once cold and then
cached, 2 s after the tree was last changed.

    .venv/bin/python benchmarks/search_files.py [--quick] [--json PATH]
"""

from __future__ import annotations

import os
import re
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import _old_search
from _common import machine, ms, p90, ratio, script_main, table

from engine.tools.search import Matcher, search_files
from sandbox.guard import WorkspaceGuard

FILES = 10_000
PATTERNS = {
    "rare identifier": r"frobnicate_7777\b",
    "common (def \\w+, stops at 200)": r"def \w+",
    "TODO|FIXME (1 file in 10)": r"TODO|FIXME",
}


def build(root: Path) -> None:
    """500 folders (50 top-level, 10 below each) of 20 Python-like files, ~60 lines each."""
    body = "\n".join(
        f"    value_{i} = compute(argument_{i}, other={i})  # a comment {i}" for i in range(55)
    )
    for n in range(FILES):
        folder = root / f"pkg{n // 200:02}" / f"mod{(n // 20) % 10}"
        folder.mkdir(parents=True, exist_ok=True)
        extra = "\n# TODO: tidy this\n" if n % 10 == 0 else ""
        name = "frobnicate_7777" if n == FILES - 7 else f"function_{n}"
        (folder / f"file{n % 20:02}.py").write_text(
            f'"""Module {n}."""\n\n\ndef {name}(x):\n{body}\n    return x\n{extra}'
        )


def _new(ws: Path, pattern: str) -> str:
    matcher = Matcher.compile(pattern, time.monotonic() + 600, threading.Event())
    return search_files(ws, matcher, pattern, None)


def _old(ws: Path, pattern: str) -> str:
    deadline = time.monotonic() + 600
    return _old_search._search_files(ws, re.compile(pattern), None, deadline, threading.Event())


def run(quick: bool) -> dict[str, Any]:
    rounds = 3 if quick else 9
    with tempfile.TemporaryDirectory(prefix="gatehouse-search-bench-") as tmp:
        ws = Path(tmp, "ws")
        build(ws)
        for name in (".git/hooks", ".vscode"):
            (ws / name).mkdir(parents=True)
        (ws / ".git" / "config").write_text("[core]\n\tbare = false\n")
        results: dict[str, Any] = {}
        for label, pattern in PATTERNS.items():
            assert _new(ws, pattern) == _old(ws, pattern), label  # same answer, then time it
            samples: dict[str, list[float]] = {"new": [], "old": []}
            for i in range(rounds):
                order = [("new", _new), ("old", _old)]
                for name, fn in order if i % 2 else reversed(order):
                    started = time.perf_counter()
                    fn(ws, pattern)
                    samples[name].append(time.perf_counter() - started)
            new, old = statistics.median(samples["new"]), statistics.median(samples["old"])
            results[label] = {
                "new_median_s": new,
                "old_median_s": old,
                "new_p90_s": p90(samples["new"]),
                "old_p90_s": p90(samples["old"]),
                "ratio": new / old,
            }
        os.sync()
        time.sleep(2.1)  # older than autorun.SETTLE_NS: a tree nobody changed just now
        guard = WorkspaceGuard(ws, Path(tmp, "quarantine"))
        started = time.perf_counter()
        guard.after(guard.before())
        cold = time.perf_counter() - started
        warm = []
        for _ in range(rounds * 3):
            started = time.perf_counter()
            guard.after(guard.before())
            warm.append(time.perf_counter() - started)
        folders = guard.scanner.folders
    return {
        "machine": machine(),
        "files": FILES,
        "rounds": rounds,
        "search": results,
        "guard": {
            "folders": folders,
            "cold_s": cold,
            "warm_median_s": statistics.median(warm),
            "warm_p90_s": p90(warm),
        },
    }


def report(data: dict[str, Any]) -> str:
    rows = [
        [label, ms(r["old_median_s"]), ms(r["new_median_s"]), ratio(r["ratio"])]
        for label, r in data["search"].items()
    ]
    guard = data["guard"]
    return "\n".join(
        [
            table(
                f"search_files over {data['files']:,} files ({data['rounds']} runs each)",
                ["pattern", "before (re, by path)", "now (regex, by fd)", "now / before"],
                rows,
            ),
            "",
            f"auto-run check per command (before + after) over {guard['folders']} folders: "
            f"first {ms(guard['cold_s'])}, then {ms(guard['warm_median_s'])} median "
            f"(p90 {ms(guard['warm_p90_s'])})",
        ]
    )


if __name__ == "__main__":
    raise SystemExit(script_main(__doc__, run, report))
