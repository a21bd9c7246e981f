"""``gatehouse audit verify`` and ``gatehouse audit show``: the audit log, checked and read.

``verify`` walks the hash chain and names each record that was edited, removed or reordered
(exit 1); an unfinished last record (a server killed while writing it) is reported but is not a
failure: the call it described never ran. ``show`` prints the log for a person (every text the
model wrote goes through the display rule) or, with ``--json``, as it is on disk.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from engine.memory.audit import records, verify
from engine.memory.places import audit_log_path
from server.protocol.display import visible


def verify_command(as_json: bool) -> int:
    path = audit_log_path()
    result = verify(path)
    if as_json:
        problems = [{"line": p.line, "kind": p.kind, "detail": p.detail} for p in result.problems]
        out = {"log": str(path), "records": result.records, "ok": result.ok, "problems": problems}
        print(json.dumps(out))
        return 0 if result.ok else 1
    if not path.exists():
        print(f"No audit log yet ({path}).")
        return 0
    for problem in result.problems:
        label = "warning" if not problem.fatal else problem.kind
        print(f"line {problem.line}: {label}: {problem.detail}")
    if result.ok:
        print(f"The audit log is intact: {result.records} records, chain verified ({path}).")
        return 0
    print(f"The audit log was tampered with ({path}): see the lines above.", file=sys.stderr)
    return 1


def _when(record: dict[str, Any]) -> str:
    return str(record.get("time", "?")).replace("T", " ").rstrip("Z")[:19]


def _arguments(arguments: Any) -> str:
    if isinstance(arguments, dict):
        for key in ("command", "code"):
            if isinstance(arguments.get(key), str) and len(arguments) == 1:
                return str(arguments[key])
    return json.dumps(arguments, ensure_ascii=False)


def describe(record: dict[str, Any]) -> str:
    """One record as a line (or lines) for a person."""
    kind = record.get("type", "?")
    tool = record.get("tool", "")
    head = f"{_when(record)}  {record.get('turn', '-')}  {kind:<13} {tool}"
    if kind == "approval":
        rule = f" rule {record['ruleId']}" if record.get("ruleId") else ""
        message = f": {record['message']}" if record.get("message") else ""
        return f"{head}  {record.get('decision')} by {record.get('decidedBy')}{rule}{message}"
    if kind == "approval_request":
        lines = _arguments(record.get("arguments")).split("\n")
        body = "\n".join("      " + line for line in lines)
        return f"{head}  asked ({record.get('reason')})\n{body}"
    if kind == "execution":
        network = "on" if record.get("network") else "off"
        where = f"[{record.get('isolation')}, network {network}, {record.get('decidedBy')}]"
        lines = _arguments(record.get("arguments")).split("\n")
        body = "\n".join("      " + line for line in lines)
        return f"{head}  {where} sha256 {str(record.get('sha256', ''))[:12]}…\n{body}"
    if kind == "execution_end":
        return f"{head}  exit {record.get('exitCode')} in {record.get('durationMs')} ms"
    if kind == "rewind":
        force = " (force)" if record.get("force") else ""
        writes = record.get("writes")
        count = f", {len(writes)} file(s)" if isinstance(writes, list) else ""
        return f"{head}  {record.get('scope')}{force}{count}"
    if kind == "rewind_end":
        written = record.get("written") or []
        return f"{head}  {len(written)} file(s) written, {len(record.get('skipped') or [])} left"
    if kind == "log_repaired":
        return f"{head}  {record.get('detail')}"
    return f"{head}  {json.dumps(record, ensure_ascii=False)}"


def show_command(session: str | None, workspace: Path | None, as_json: bool) -> int:
    path = audit_log_path()
    root = os.path.realpath(workspace) if workspace is not None else None
    shown = 0
    for record in records(path):
        if session is not None and record.get("session") != session:
            continue
        if root is not None and record.get("workspace") != root:
            continue
        shown += 1
        if as_json:
            print(json.dumps(record, ensure_ascii=False))
        else:
            print(visible(describe(record)))
    if not as_json and shown == 0:
        print(f"No matching audit records ({path}).")
    return 0
