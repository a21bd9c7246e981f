"""Confirmation round trip: what the ``toolConfirm`` gate costs per tool call.

A scripted model makes K ``list_files`` calls in consecutive model turns of one ``agent/chat``
(``confirmToolCalls: true``, ``maxToolCalls: K``); the client answers every ``toolConfirm`` with
``allow`` as soon as it arrives. Each call lists its own small subdirectory: the loop skips an
identical call that already succeeded in the same request, so K copies of ``{}`` would be gated
only once. Per call, timestamped as the raw reader dispatches each message:

- answer -> running: ``toolConfirm`` received to the ``status`` "Running list_files"
  notification: the client's answer going out plus the server processing it;
- gate round trip: ``tool_start`` to that ``status``: the whole gate as the client sees it;
- call cycle: one ``tool_start`` to the next (model turn + gate + tool + bookkeeping).

Baselines in the same run, on the same connection: K ``agent/status`` ping round trips (the
transport floor for one request/response), and the same K-call script with
``confirmToolCalls: false, confirmCodeExecution: false`` (no gate). The per-call cost of the gate
is the difference of the median call cycles with and without it. Rounds alternate the order.

Edits against commands (issue 10): K ``edit_file`` calls, each on its own small file (read first,
ungated), asked about under ``confirmFileEdits`` (the prompt carries the diff), against K
``terminal`` calls asked about under ``confirmCodeExecution``: the gate round trip (``tool_start``
to "Running ...") of an edit and of a command, side by side.

    .venv/bin/python benchmarks/confirm_roundtrip.py [--quick] [--json PATH]
"""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import _common as c

from harness.connection import ErrorResponse, RpcClient

RUNNING = "Running list_files"


def call_markup(path: str) -> str:
    return (
        "<tool_call>"
        + json.dumps({"name": "list_files", "arguments": {"path": path}})
        + ("</tool_call>")
    )


def markup(name: str, **arguments: Any) -> str:
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


def edit_chat(calls: int) -> list[str]:
    """Read K files, then edit each (every call differs: the files are reset between chats)."""
    reads = [markup("read_file", path=f"e{i:03d}.txt") for i in range(calls)]
    edits = [
        markup("edit_file", path=f"e{i:03d}.txt", old_text="x", new_text=f"y{i}")
        for i in range(calls)
    ]
    return [*reads, *edits, "Done."]


def command_chat(calls: int) -> list[str]:
    return [*(markup("terminal", command=f"true {i}") for i in range(calls)), "Done."]


def dir_name(index: int) -> str:
    return f"d{index:03d}"


@dataclass
class Timeline:
    """Arrival times of the messages that matter, recorded by a reader observer."""

    tool_starts: list[float] = field(default_factory=list)
    confirms: list[float] = field(default_factory=list)
    running: list[float] = field(default_factory=list)
    last_response: float = 0.0
    starts_of: dict[str, list[float]] = field(default_factory=dict)
    running_of: dict[str, list[float]] = field(default_factory=dict)

    def reset(self) -> None:
        self.tool_starts, self.confirms, self.running = [], [], []
        self.starts_of, self.running_of = {}, {}

    def __call__(self, message: dict[str, Any]) -> None:
        now = time.perf_counter()
        method = message.get("method")
        if method is None:
            self.last_response = now
        elif method == "toolConfirm":
            self.confirms.append(now)
        elif method == "agent/stream":
            params = message.get("params") or {}
            kind = params.get("type")
            if kind == "tool_start":
                self.tool_starts.append(now)
                self.starts_of.setdefault(params["name"], []).append(now)
            elif kind == "status" and params.get("text") == RUNNING:
                self.running.append(now)
            if kind == "status" and str(params.get("text")).startswith("Running "):
                self.running_of.setdefault(params["text"][8:], []).append(now)


@dataclass
class Samples:
    ping: list[float] = field(default_factory=list)
    gated_answer_to_running: list[float] = field(default_factory=list)
    gated_start_to_confirm: list[float] = field(default_factory=list)
    gated_round_trip: list[float] = field(default_factory=list)
    gated_cycle: list[float] = field(default_factory=list)
    ungated_start_to_running: list[float] = field(default_factory=list)
    ungated_cycle: list[float] = field(default_factory=list)
    edit_round_trip: list[float] = field(default_factory=list)
    command_round_trip: list[float] = field(default_factory=list)


def cycles(starts: list[float]) -> list[float]:
    return [b - a for a, b in itertools.pairwise(starts)]


async def pings(client: RpcClient, timeline: Timeline, count: int, out: list[float]) -> None:
    for _ in range(count):
        sent = time.perf_counter()
        await client.request("agent/status", {})
        out.append(timeline.last_response - sent)


async def chat(
    client: RpcClient, timeline: Timeline, calls: int, *, gated: bool, samples: Samples
) -> None:
    params: dict[str, Any] = {"prompt": "go", "maxToolCalls": calls}
    if gated:
        params["confirmToolCalls"] = True
    else:
        params.update(confirmToolCalls=False, confirmCodeExecution=False)
    timeline.reset()
    result = await client.request("agent/chat", params)
    statuses = [call["status"] for call in result["toolCalls"]]
    assert result["stopReason"] == "end_turn", result["stopReason"]
    assert statuses == ["completed"] * calls, statuses
    assert len(timeline.tool_starts) == len(timeline.running) == calls
    if gated:
        assert len(timeline.confirms) == calls
        for start, confirm, running in zip(
            timeline.tool_starts, timeline.confirms, timeline.running, strict=True
        ):
            samples.gated_start_to_confirm.append(confirm - start)
            samples.gated_answer_to_running.append(running - confirm)
            samples.gated_round_trip.append(running - start)
        samples.gated_cycle.extend(cycles(timeline.tool_starts))
    else:
        assert not timeline.confirms
        samples.ungated_start_to_running.extend(
            r - s for s, r in zip(timeline.tool_starts, timeline.running, strict=True)
        )
        samples.ungated_cycle.extend(cycles(timeline.tool_starts))


async def gate_of(
    client: RpcClient,
    timeline: Timeline,
    workspace: Path,
    kind: str,
    *,
    calls: int,
    out: list[float],
) -> None:
    """One chat of K edits or K commands; the gate round trip of each."""
    name = "edit_file" if kind == "edit" else "terminal"
    for i in range(calls):
        (workspace / f"e{i:03d}.txt").write_text("x\n", encoding="utf-8")
    timeline.reset()
    result = await client.request("agent/chat", {"prompt": kind, "maxToolCalls": 2 * calls})
    statuses = {call["status"] for call in result["toolCalls"]}
    assert statuses == {"completed"}, result["toolCalls"]
    starts, running = timeline.starts_of[name], timeline.running_of[name]
    assert len(starts) == len(running) == calls
    out.extend(r - s for s, r in zip(starts, running, strict=True))


async def answer_allow(_params: Any) -> dict[str, str]:
    return {"decision": "allow"}


STEPS = ("ping", "gated", "ungated", "edit", "command")


def steps_of(r: int) -> list[str]:
    return list(STEPS[r % len(STEPS) :] + STEPS[: r % len(STEPS)])


async def measure(calls: int, rounds: int, tmp: Path) -> Samples:
    workspace = tmp / "ws"
    for i in range(calls):
        (workspace / dir_name(i)).mkdir(parents=True)
        (workspace / dir_name(i) / "file.txt").write_text("x\n", encoding="utf-8")
    one_chat = [call_markup(dir_name(i)) for i in range(calls)] + ["Done."]
    chats = {"gated": one_chat, "ungated": one_chat, "edit": edit_chat(calls)}
    chats["command"] = command_chat(calls)
    turns = one_chat * 2 + chats["edit"] + chats["command"]  # the warm-up chats
    for r in range(rounds):
        turns += [t for step in steps_of(r) if step != "ping" for t in chats[step]]
    script = tmp / "script.json"
    script.write_text(json.dumps({"turns": turns}), encoding="utf-8")

    timeline = Timeline()
    client = RpcClient()
    argv = (*c.GATEHOUSE_ARGV, "--backend", "scripted", "--script", str(script))
    await client.start(argv, env=c.child_env(), cwd=c.REPO_ROOT, stderr=c.server_stderr())
    client.on_message(timeline)
    client.on_request("toolConfirm", answer_allow)
    samples = Samples()
    try:
        await client.request("initialize", c.initialize_params(workspace, tool_confirm=True))
        client.notify("initialized", {})
        warm = Samples()  # the first chat of each kind and a few pings: not counted
        await pings(client, timeline, 20, warm.ping)
        await chat(client, timeline, calls, gated=True, samples=warm)
        await chat(client, timeline, calls, gated=False, samples=warm)
        await gate_of(client, timeline, workspace, "edit", calls=calls, out=warm.edit_round_trip)
        warm_commands = warm.command_round_trip
        await gate_of(client, timeline, workspace, "command", calls=calls, out=warm_commands)
        for r in range(rounds):
            for step in steps_of(r):
                if step == "ping":
                    await pings(client, timeline, calls, samples.ping)
                elif step in ("edit", "command"):
                    out = samples.edit_round_trip if step == "edit" else samples.command_round_trip
                    await gate_of(client, timeline, workspace, step, calls=calls, out=out)
                else:
                    await chat(client, timeline, calls, gated=step == "gated", samples=samples)
    finally:
        await client.close()
    return samples


def run(quick: bool) -> dict[str, Any]:
    calls = 40 if quick else 200
    rounds = 2 if quick else 5
    with tempfile.TemporaryDirectory(prefix="gatehouse-bench-") as tmp:
        samples = asyncio.run(measure(calls, rounds, Path(tmp)))
    stats = {name: c.summary(values) for name, values in vars(samples).items()}
    ping = stats["ping"]["median"]
    gate = stats["gated_round_trip"]["median"]
    answer = stats["gated_answer_to_running"]["median"]
    gate_cost = stats["gated_cycle"]["median"] - stats["ungated_cycle"]["median"]
    headline = [
        [
            "confirm: gate round trip median (p90)",
            f"{c.ms(gate)} ({c.ms(stats['gated_round_trip']['p90'])})",
        ],
        [
            "confirm: answer -> running median (p90)",
            f"{c.ms(answer)} ({c.ms(stats['gated_answer_to_running']['p90'])})",
        ],
        ["confirm: agent/status ping median (p90)", f"{c.ms(ping)} ({c.ms(stats['ping']['p90'])})"],
        ["confirm: gate round trip / ping", c.ratio(gate / ping)],
        ["confirm: answer -> running / ping", c.ratio(answer / ping)],
        [
            "confirm: call cycle gated / ungated median",
            f"{c.ms(stats['gated_cycle']['median'])} / {c.ms(stats['ungated_cycle']['median'])}",
        ],
        ["confirm: per-call cost of the gate", c.ms(gate_cost)],
        [
            "confirm: gate round trip, edit / command median",
            f"{c.ms(stats['edit_round_trip']['median'])} / "
            f"{c.ms(stats['command_round_trip']['median'])}",
        ],
        [
            "confirm: edit gate / command gate",
            c.ratio(stats["edit_round_trip"]["median"] / stats["command_round_trip"]["median"]),
        ],
    ]
    return {
        "benchmark": "confirm_roundtrip",
        "machine": c.machine(),
        "quick": quick,
        "calls_per_chat": calls,
        "rounds": rounds,
        "unit": "seconds",
        "stats": stats,
        "ratio_gate_round_trip_over_ping": gate / ping,
        "ratio_answer_to_running_over_ping": answer / ping,
        "gate_cost_per_call_seconds": gate_cost,
        "ratio_edit_gate_over_command_gate": stats["edit_round_trip"]["median"]
        / stats["command_round_trip"]["median"],
        "headline": headline,
    }


ROWS: tuple[tuple[str, str], ...] = (
    ("agent/status ping round trip", "ping"),
    ("gated: tool_start -> toolConfirm", "gated_start_to_confirm"),
    ("gated: toolConfirm -> Running (answer)", "gated_answer_to_running"),
    ("gated: tool_start -> Running (gate)", "gated_round_trip"),
    ("ungated: tool_start -> Running", "ungated_start_to_running"),
    ("gated: call cycle", "gated_cycle"),
    ("ungated: call cycle", "ungated_cycle"),
    ("edit_file: tool_start -> Running (gate)", "edit_round_trip"),
    ("terminal: tool_start -> Running (gate)", "command_round_trip"),
)


def report(result: dict[str, Any]) -> str:
    stats = result["stats"]
    ping = stats["ping"]["median"]
    rows = [
        [
            label,
            str(stats[key]["n"]),
            c.ms(stats[key]["median"]),
            c.ms(stats[key]["p90"]),
            c.ratio(stats[key]["median"] / ping),
        ]
        for label, key in ROWS
    ]
    return "\n".join(
        [
            c.table(
                f"toolConfirm round trip, {result['calls_per_chat']} list_files calls per chat, "
                f"{result['rounds']} rounds",
                ["interval", "n", "median", "p90", "vs ping"],
                rows,
            ),
            f"gate round trip / ping: {c.ratio(result['ratio_gate_round_trip_over_ping'])}; "
            f"answer -> running / ping: {c.ratio(result['ratio_answer_to_running_over_ping'])}",
            "per-call cost of the gate (median cycle gated - ungated): "
            f"{c.ms(result['gate_cost_per_call_seconds'])}",
            "gate round trip, edit_file (diff in the prompt) / terminal: "
            f"{c.ratio(result['ratio_edit_gate_over_command_gate'])}",
        ]
    )


def main(argv: Sequence[str] | None = None) -> int:
    return c.script_main(__doc__, run, report, argv, errors=(ErrorResponse,))


if __name__ == "__main__":
    sys.exit(main())
