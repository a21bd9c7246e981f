"""``gatehouse doctor``: what isolation this machine gives approved code, and why not more."""

from __future__ import annotations

import json
import os
import platform
import sys
from pathlib import Path
from typing import Any

from engine import __version__
from sandbox import cgroups
from sandbox.autorun import AUTORUN_NAMES, AutorunScanner
from sandbox.policy import LEVELS, SandboxSettings
from sandbox.probe import Place, probe
from sandbox.runtime import inside_workspace


def autorun_report(workspace: Path, runtime: list[str]) -> dict[str, Any]:
    """The auto-run names, the auto-run paths found in ``workspace``, and the server's own files
    that lie in it."""
    found = AutorunScanner(workspace).find()
    root = os.path.realpath(workspace)
    return {
        "workspace": root,
        "names": [{"name": name, "why": why} for name, why in AUTORUN_NAMES.items()],
        "found": [
            {"path": rel, "why": why, "exists": os.path.lexists(os.path.join(root, rel))}
            for rel, why in sorted(found.items())
        ],
        "runtimeInWorkspace": inside_workspace(runtime, workspace),
    }


def report(
    settings: SandboxSettings | None = None, workspace: Path | None = None
) -> dict[str, Any]:
    """Check every tier (a real self-test each) and describe the result."""
    settings = settings or SandboxSettings()
    workspace = workspace or Path.cwd()
    result = probe(settings, all_tiers=True, place=Place(workspace))
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
        "codeExecution": "refused" if sandbox.refusal(workspace) else "allowed",
        "refusal": sandbox.refusal(workspace),
        "tiers": [
            {"level": c.level, "available": c.available, "detail": c.detail} for c in result.checks
        ],
        "cgroups": cgroup,
        "probeMilliseconds": round(result.seconds * 1000, 1),
        "autorun": autorun_report(workspace, sandbox.runtime()),
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
    if data.get("refusal"):
        lines.append(f"  {data['refusal']}")
    lines.append(f"(probe took {data['probeMilliseconds']} ms)")
    lines += ["", *_render_autorun(data["autorun"], data["level"])]
    return "\n".join(lines)


def _render_autorun(autorun: dict[str, Any], level: str) -> list[str]:
    how = {
        "strong": "read-only inside the sandbox; new ones are moved out after each call",
        "standard": "changes are undone and new ones moved out after each call",
    }.get(level, "NOT protected at this level")
    lines = [f"Auto-run paths (run or read outside the sandbox without approval): {how}"]
    lines += [f"  {n['name']:<24} {n['why']}" for n in autorun["names"]]
    lines.append("  plus core.hooksPath folders and programs named in git configs")
    lines.append(f"In {autorun['workspace']}:")
    found = autorun["found"]
    named = {n["name"] for n in autorun["names"]}
    lines += [
        f"  {'exists' if f['exists'] else 'absent'}  {f['path']}"
        + ("" if f["path"].rsplit("/", 1)[-1] in named else f"  ({f['why']})")
        for f in found
    ] or ["  none found"]
    for path in autorun["runtimeInWorkspace"]:
        lines.append(f"  runtime  {path}  (the server itself runs or imports it: kept read-only)")
    return lines


def run_doctor(as_json: bool, network: bool = False, workspace: Path | None = None) -> int:
    data = report(SandboxSettings(network=network), workspace)
    print(json.dumps(data, indent=2) if as_json else render(data))
    return 0 if data["codeExecution"] == "allowed" else 1
