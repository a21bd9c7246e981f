"""``gatehouse doctor``: what isolation this machine gives approved code, and why not more."""

from __future__ import annotations

import json
import os
import platform
import sys
from typing import Any

from engine import __version__
from sandbox import cgroups
from sandbox.policy import LEVELS, SandboxSettings
from sandbox.probe import probe


def report(settings: SandboxSettings | None = None) -> dict[str, Any]:
    """Check every tier (a real self-test each) and describe the result."""
    settings = settings or SandboxSettings()
    result = probe(settings, all_tiers=True)
    sandbox = result.sandbox
    trees = cgroups.discover() if sys.platform == "linux" else []
    cgroup = {
        "writable": bool(trees),
        "processLimit": any(t.pids for t in trees),
        "treeKill": any(t.kill for t in trees),
    }
    cgroups.remove_trees(trees)
    return {
        "version": __version__,
        "platform": f"{platform.system()} {platform.release()} ({platform.machine()})",
        "user": "root" if hasattr(os, "getuid") and os.getuid() == 0 else "unprivileged",
        "level": sandbox.info.level,
        "network": sandbox.info.network,
        "reason": sandbox.info.reason,
        "minLevel": settings.min_level,
        "codeExecution": "refused" if sandbox.refusal() else "allowed",
        "tiers": [
            {"level": c.level, "available": c.available, "detail": c.detail} for c in result.checks
        ],
        "cgroups": cgroup,
        "probeMilliseconds": round(result.seconds * 1000, 1),
    }


def render(data: dict[str, Any]) -> str:
    lines = [
        f"gatehouse {data['version']} on {data['platform']}, running as {data['user']}",
        "",
        f"Isolation level: {data['level']} (network {'on' if data['network'] else 'off'})",
        f"  {data['reason']}",
        f"  sandbox.minLevel is {data['minLevel']}: code execution is {data['codeExecution']}.",
        "",
        "Tiers, strongest first:",
    ]
    for tier in sorted(data["tiers"], key=lambda t: -LEVELS.index(t["level"])):
        mark = "ok " if tier["available"] else "no "
        lines.append(f"  [{mark}] {tier['level']:<12} {tier['detail']}")
    cg = data["cgroups"]
    if cg["writable"]:
        limit = "yes" if cg["processLimit"] else "no"
        kill = "yes" if cg["treeKill"] else "no"
        lines.append(f"  cgroups: writable (process limit: {limit}, tree kill: {kill})")
    else:
        lines.append(
            "  cgroups: not writable: the process limit is RLIMIT_NPROC (does not bind root)"
        )
    lines.append("  environment: always rebuilt from an allow-list; secret-looking values dropped")
    lines.append(f"(probe took {data['probeMilliseconds']} ms)")
    return "\n".join(lines)


def run_doctor(as_json: bool, network: bool = False) -> int:
    data = report(SandboxSettings(network=network))
    print(json.dumps(data, indent=2) if as_json else render(data))
    return 0 if data["codeExecution"] == "allowed" else 1
