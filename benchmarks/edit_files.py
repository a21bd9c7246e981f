"""Edits through the real server: what an approved edit costs, against the way it was done before.

A scripted model makes the calls; the client answers every ``toolConfirm`` with ``allow`` at once.
Per call, timestamped as the raw reader dispatches each message:

- **answer -> tool_end**: the answer sent to the ``tool_end`` received: the write (checks again,
  encodes, writes every file atomically, updates the ledger) and its result;
- **tool_start -> toolConfirm**: the prompt going out (the server announces a call once its
  proposal exists);
- **proposal**: the edit tool's proposal (read the file, check it, match, the new text, **the
  diff**), measured in this process on the same files after the server's run (the same code);
- **server work**: proposal + tool_start -> toolConfirm + answer -> tool_end: everything the
  server does for one edit except waiting for a person.

Contenders, side by side in the same run (rounds alternate them):

- ``edit_file`` on a 1 MB file (15,400 lines; one line changed each time), against the
  same replacement by an approved ``python`` call (how a model changed a file before edit tools:
  the code runs in the sandbox);
- ``apply_patch`` of 20 files (one hunk each), against the same patch by an approved
  ``terminal`` call running ``patch -p1``.

    .venv/bin/python benchmarks/edit_files.py [--quick] [--json PATH]
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import _common as c

from engine.tools.base import ToolContext
from engine.tools.edits import ApplyPatchTool, EditFileTool, EditTool
from engine.tools.files import ReadFileTool
from harness.connection import ErrorResponse, RpcClient

BIG_LINES = 15_400  # 1.0 MB
PATCHED_FILES = 20
LINE = "line {n:05d} of the big file, with some words to make it realistic\n"
TARGET = LINE.format(n=12_345)


def version(v: int) -> str:
    """The changed line after ``v`` edits (every call differs: the loop skips a call identical to
    one that already succeeded)."""
    return TARGET if v == 0 else TARGET.replace("realistic", f"realistic, version {v}")


def call(name: str, **arguments: Any) -> str:
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


def patch_text(v: int) -> str:
    old, new = f"x = {v}", f"x = {v + 1}"
    return "".join(
        f"--- a/src/m{i:02d}.py\n+++ b/src/m{i:02d}.py\n@@ -50,3 +50,3 @@\n"
        f" # line 49\n-{old}\n+{new}\n # line 51\n"
        for i in range(PATCHED_FILES)
    )


def module_text() -> str:
    lines = [f"# line {n}\n" for n in range(200)]
    lines[50] = "x = 0\n"
    return "".join(lines)


def python_code(old: str, new: str) -> str:
    return (
        "p = 'big.txt'\n"
        "t = open(p, encoding='utf-8').read()\n"
        f"open(p, 'w', encoding='utf-8').write(t.replace({old!r}, {new!r}, 1))\n"
    )


def terminal_patch(v: int) -> str:
    return f"patch -s -p1 <<'EOF'\n{patch_text(v)}EOF"


@dataclass
class Timeline:
    starts: dict[str, float] = field(default_factory=dict)
    confirms: dict[str, float] = field(default_factory=dict)
    answers: dict[str, float] = field(default_factory=dict)
    ends: dict[str, tuple[float, str, str]] = field(default_factory=dict)

    def __call__(self, message: dict[str, Any]) -> None:
        now = time.perf_counter()
        params = message.get("params") or {}
        if message.get("method") == "toolConfirm":
            self.confirms[params["toolCallId"]] = now
        elif message.get("method") == "agent/stream":
            if params.get("type") == "tool_start":
                self.starts[params["toolCallId"]] = now
            elif params.get("type") == "tool_end":
                self.ends[params["toolCallId"]] = (now, params["name"], params["status"])


@dataclass
class Samples:
    answer_to_end: dict[str, list[float]] = field(default_factory=dict)
    start_to_confirm: dict[str, list[float]] = field(default_factory=dict)
    proposal: dict[str, list[float]] = field(default_factory=dict)
    server_work: dict[str, list[float]] = field(default_factory=dict)


async def proposals(workspace: Path, count: int, samples: Samples) -> None:
    """The edit tools' proposals on the same files, in this process."""
    ctx = ToolContext(workspace=workspace, timeout_seconds=60)
    reader = ReadFileTool()
    for path in ["big.txt", *(f"src/m{i:02d}.py" for i in range(PATCHED_FILES))]:
        await reader.run(reader.parse_arguments({"path": path}), ctx)
    big = next(v for v in range(10_000) if version(v) in (workspace / "big.txt").read_text())
    patched = int((workspace / "src" / "m00.py").read_text().split("x = ")[1].split()[0])
    calls: list[tuple[str, EditTool, dict[str, Any]]] = [
        ("edit_file", EditFileTool(), {"path": "big.txt", "old_text": version(big),
                                       "new_text": version(big + 1)}),
        ("apply_patch", ApplyPatchTool(), {"patch": patch_text(patched)}),
    ]  # fmt: skip
    for _ in range(count):
        for kind, tool, arguments in calls:
            start = time.perf_counter()
            proposal = await tool.propose(tool.parse_arguments(arguments), ctx)
            samples.proposal.setdefault(kind, []).append(time.perf_counter() - start)
            assert proposal.edits


def script(calls: int, rounds: int) -> tuple[list[str], list[str]]:
    """The model's turns, and the order of the chats they belong to."""
    turns: list[str] = []
    order: list[str] = []
    big = patched = 0  # versions of the big file and of the 20 modules
    for r in range(rounds + 1):  # the first round warms up
        kinds = ["edit_file", "python", "apply_patch", "terminal"]
        for kind in kinds[r % 4 :] + kinds[: r % 4]:
            order.append(kind)
            if kind in ("apply_patch", "edit_file"):  # a new session: read before editing
                paths = ["big.txt"] if kind == "edit_file" else []
                paths += [f"src/m{i:02d}.py" for i in range(PATCHED_FILES)] if not paths else []
                turns += [call("read_file", path=path) for path in paths]
            for _ in range(calls):
                if kind == "edit_file":
                    old, new = version(big), version(big + 1)
                    turns.append(call("edit_file", path="big.txt", old_text=old, new_text=new))
                elif kind == "python":
                    turns.append(call("python", code=python_code(version(big), version(big + 1))))
                elif kind == "apply_patch":
                    turns.append(call("apply_patch", patch=patch_text(patched)))
                else:
                    turns.append(call("terminal", command=terminal_patch(patched)))
                big += kind in ("edit_file", "python")
                patched += kind in ("apply_patch", "terminal")
            turns.append("done")
    return turns, order


async def measure(calls: int, rounds: int, tmp: Path) -> Samples:
    workspace = tmp / "ws"
    (workspace / "src").mkdir(parents=True)
    (workspace / "big.txt").write_text("".join(LINE.format(n=n) for n in range(BIG_LINES)))
    for i in range(PATCHED_FILES):
        (workspace / "src" / f"m{i:02d}.py").write_text(module_text())
    turns, order = script(calls, rounds)
    script_file = tmp / "script.json"
    script_file.write_text(json.dumps({"turns": turns}), encoding="utf-8")

    timeline = Timeline()

    async def allow(params: Any) -> dict[str, str]:
        timeline.answers[params["toolCallId"]] = time.perf_counter()
        return {"decision": "allow"}

    client = RpcClient()
    argv = (*c.GATEHOUSE_ARGV, "--backend", "scripted", "--script", str(script_file))
    await client.start(argv, env=c.child_env(), cwd=c.REPO_ROOT, stderr=c.server_stderr())
    client.on_message(timeline)
    client.on_request("toolConfirm", allow)
    samples = Samples()
    try:
        await client.request("initialize", c.initialize_params(workspace, tool_confirm=True))
        client.notify("initialized", {})
        for index, kind in enumerate(order):
            timeline.starts.clear()
            result = await client.request("agent/chat", {"prompt": kind, "maxToolCalls": 100})
            statuses = {call["status"] for call in result["toolCalls"]}
            assert statuses == {"completed"}, (kind, result["toolCalls"][-1])
            if index < 4:
                continue  # warm-up round
            for call_id, (ended, name, _status) in timeline.ends.items():
                if (
                    name != kind
                    or call_id not in timeline.answers
                    or call_id not in timeline.starts
                ):
                    continue
                answer_to_end = ended - timeline.answers[call_id]
                start_to_confirm = timeline.confirms[call_id] - timeline.starts[call_id]
                samples.answer_to_end.setdefault(kind, []).append(answer_to_end)
                samples.start_to_confirm.setdefault(kind, []).append(start_to_confirm)
                samples.server_work.setdefault(kind, []).append(answer_to_end + start_to_confirm)
            timeline.ends.clear()
    finally:
        await client.close()
    await proposals(workspace, calls * rounds, samples)
    for kind, values in samples.proposal.items():
        middle = c.summary(values)["median"]
        samples.server_work[kind] = [work + middle for work in samples.server_work[kind]]
    return samples


def run(quick: bool) -> dict[str, Any]:
    calls = 6 if quick else 10
    rounds = 1 if quick else 3
    with tempfile.TemporaryDirectory(prefix="gatehouse-bench-") as tmp:
        samples = asyncio.run(measure(calls, rounds, Path(tmp)))
    stats = {
        part: {kind: c.summary(values) for kind, values in getattr(samples, part).items()}
        for part in ("answer_to_end", "start_to_confirm", "proposal", "server_work")
    }
    a2e = stats["answer_to_end"]
    edit, python = a2e["edit_file"]["median"], a2e["python"]["median"]
    patch, terminal = a2e["apply_patch"]["median"], a2e["terminal"]["median"]
    headline = [
        ["edits: edit_file 1 MB, approval -> tool_end median", c.ms(edit)],
        ["edits: the same by python, approval -> tool_end median", c.ms(python)],
        ["edits: edit_file / python", c.ratio(edit / python)],
        [
            "edits: edit_file 1 MB, proposal incl. diff median",
            c.ms(stats["proposal"]["edit_file"]["median"]),
        ],
        [
            "edits: edit_file 1 MB, server work incl. diff median",
            c.ms(stats["server_work"]["edit_file"]["median"]),
        ],
        [
            "edits: apply_patch 20 files, proposal median",
            c.ms(stats["proposal"]["apply_patch"]["median"]),
        ],
        ["edits: apply_patch 20 files, approval -> tool_end median", c.ms(patch)],
        ["edits: the same by terminal patch -p1 median", c.ms(terminal)],
        ["edits: apply_patch / terminal", c.ratio(patch / terminal)],
    ]
    return {
        "benchmark": "edit_files",
        "machine": c.machine(),
        "quick": quick,
        "calls_per_chat": calls,
        "rounds": rounds,
        "big_file_bytes": len(LINE.format(n=0)) * BIG_LINES,
        "unit": "seconds",
        "stats": stats,
        "headline": headline,
    }


def report(result: dict[str, Any]) -> str:
    stats = result["stats"]
    rows = []
    for kind, label in (
        ("edit_file", "edit_file, 1 MB file"),
        ("python", "python, same change"),
        ("apply_patch", "apply_patch, 20 files"),
        ("terminal", "terminal patch -p1, same"),
    ):
        proposal = stats["proposal"].get(kind)
        rows.append(
            [
                label,
                str(stats["answer_to_end"][kind]["n"]),
                c.ms(stats["answer_to_end"][kind]["median"]),
                c.ms(stats["answer_to_end"][kind]["p90"]),
                "-" if proposal is None else c.ms(proposal["median"]),
                c.ms(stats["start_to_confirm"][kind]["median"]),
                c.ms(stats["server_work"][kind]["median"]),
            ]
        )
    return "\n".join(
        [
            c.table(
                f"Edits, {result['calls_per_chat']} calls per chat, {result['rounds']} rounds "
                f"(file of {result['big_file_bytes'] / 1e6:.2f} MB)",
                ["call", "n", "answer->end", "p90", "proposal", "start->confirm", "server work"],
                rows,
            ),
            *(f"{name}: {value}" for name, value in result["headline"]),
        ]
    )


def main(argv: Sequence[str] | None = None) -> int:
    return c.script_main(__doc__, run, report, argv, errors=(ErrorResponse, AssertionError))


if __name__ == "__main__":
    sys.exit(main())
