"""Shared helpers for the benchmark scripts: statistics, tables, JSON output, server launch.

Not a benchmark itself. The scripts import it as ``_common`` (they run as plain scripts, so their
own folder is on ``sys.path``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
BASELINE_SERVER = BENCH_DIR / "baseline_server.py"

GATEHOUSE_ARGV: tuple[str, ...] = (sys.executable, "-P", "-m", "server")
"""``gatehouse serve``, exactly as an editor would start it from this interpreter."""

BASELINE_ARGV: tuple[str, ...] = (sys.executable, str(BASELINE_SERVER))
"""A bare pygls ``LanguageServer``: what pygls alone costs."""


# --- command line and output -----------------------------------------------------------------


def parser(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--quick", action="store_true", help="fewer iterations (< 60 s)")
    p.add_argument("--json", metavar="PATH", help="also write the results as JSON to PATH")
    return p


def script_main(
    doc: str | None,
    run: Callable[[bool], dict[str, Any]],
    report: Callable[[dict[str, Any]], str],
    argv: Sequence[str] | None = None,
    errors: tuple[type[Exception], ...] = (RuntimeError,),
) -> int:
    """The shared ``main`` of every benchmark: parse --quick/--json, run, print, write JSON."""
    args = parser((doc or "").splitlines()[0]).parse_args(argv)
    try:
        result = run(args.quick)
    except errors as exc:
        return server_failed(exc)
    print(report(result))
    if args.json:
        write_json(args.json, result)
    return 0


def machine() -> dict[str, Any]:
    return {
        "date": time.strftime("%Y-%m-%d"),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
    }


def write_json(path: str | Path, data: dict[str, Any]) -> None:
    Path(path).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


_data_dir: Any = None


def data_dir() -> Path:
    """A data folder of this benchmark process (sessions, checkpoints, the audit log), removed
    when it exits: benchmarks never write into the user's."""
    global _data_dir  # noqa: PLW0603 - one per benchmark process
    if _data_dir is None:
        _data_dir = tempfile.TemporaryDirectory(prefix="gatehouse-bench-data-")
    return Path(_data_dir.name)


def child_env() -> dict[str, str]:
    """The environment for server children: ours, but allowed to use and write bytecode caches
    (this machine sets PYTHONDONTWRITEBYTECODE; an installed server has its ``.pyc`` files),
    with a data folder of the benchmark's own."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["GATEHOUSE_DATA_DIR"] = str(data_dir())
    return env


_server_log: Any = None


def server_stderr() -> int:
    """A file descriptor for server children's stderr: one temporary file shared by all of them,
    so that a server that dies can be explained (see :func:`server_failed`)."""
    global _server_log  # noqa: PLW0603 - one log per benchmark process
    if _server_log is None:
        _server_log = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the process
    return int(_server_log.fileno())


def server_failed(exc: Exception, lines: int = 20) -> int:
    """Report a server that went away or answered with an error, with the end of its stderr;
    the exit status for ``main``."""
    print(f"benchmark aborted: {exc}", file=sys.stderr)
    if _server_log is not None:
        _server_log.seek(0)
        tail = _server_log.read().decode("utf-8", errors="replace").rstrip().splitlines()
        if tail:
            print("last lines of the server's stderr:", file=sys.stderr)
            print("\n".join(tail[-lines:]), file=sys.stderr)
    return 1


def cpu_seconds(pid: int | None) -> float:
    """User + system CPU time a process has used so far (Linux ``/proc``; NaN elsewhere)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii")
    except (OSError, ValueError):
        return float("nan")
    fields = stat.rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# --- statistics ------------------------------------------------------------------------------


def p90(samples: Sequence[float]) -> float:
    """The 90th percentile (linear interpolation between closest ranks)."""
    if not samples:
        return float("nan")
    if len(samples) == 1:
        return samples[0]
    return statistics.quantiles(samples, n=10, method="inclusive")[8]


def summary(samples: Sequence[float]) -> dict[str, float | int]:
    """Median, p90, min, max and count of a sample list (in the samples' unit)."""
    if not samples:
        nan = float("nan")
        return {"n": 0, "median": nan, "p90": nan, "min": nan, "max": nan}
    return {
        "n": len(samples),
        "median": statistics.median(samples),
        "p90": p90(samples),
        "min": min(samples),
        "max": max(samples),
    }


def ms(seconds: float) -> str:
    """Seconds, shown as milliseconds with a sensible number of digits."""
    value = seconds * 1000.0
    if value >= 100:
        return f"{value:.0f} ms"
    if value >= 10:
        return f"{value:.1f} ms"
    return f"{value:.2f} ms"


def rate(per_second: float) -> str:
    if per_second >= 10_000:
        return f"{per_second / 1000:.1f}k/s"
    if per_second >= 100:
        return f"{per_second:.0f}/s"
    return f"{per_second:.1f}/s"


def ratio(value: float) -> str:
    return f"{value:.2f}x"


def table(title: str, headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A compact plain-text table; the first column is left-aligned, the others right-aligned."""
    cells = [list(headers), *[list(r) for r in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]

    def line(row: Sequence[str]) -> str:
        parts = [
            row[i].ljust(widths[i]) if i == 0 else row[i].rjust(widths[i]) for i in range(len(row))
        ]
        return "  ".join(parts).rstrip()

    rule = "-" * len(line(headers))
    return "\n".join([title, rule, line(headers), rule, *(line(r) for r in rows), rule])


# --- LSP helpers -----------------------------------------------------------------------------


def initialize_params(
    workspace: Path | None = None, *, tool_confirm: bool = False
) -> dict[str, Any]:
    """``initialize`` params of a minimal editor (optionally one that answers ``toolConfirm``)."""
    params: dict[str, Any] = {
        "processId": os.getpid(),
        "clientInfo": {"name": "gatehouse-bench"},
        "capabilities": {"experimental": {"toolConfirm": True}} if tool_confirm else {},
        "rootUri": None,
    }
    if workspace is not None:
        params["rootUri"] = workspace.as_uri()
        params["workspaceFolders"] = [{"uri": workspace.as_uri(), "name": workspace.name}]
    return params
