"""What a turn changed, and what rewinding to before a turn would write.

A turn that changes anything has two checkpoints: *before* (taken right before its first
approved command or edit runs) and *after* (when the turn ends). What the turn changed is the
difference between the two, command effects included (a file a shell command wrote is in it like
an edit). A turn whose server was killed has no *after*: the next checkpoint stands in for it
(the next turn's *before*, or the workspace as it is now).

Rewinding to before turn T undoes what the agent changed in turn T and after it, and nothing
else: a path is restored only if some turn from T on changed it. It is a **conflict** (written
only with ``force``) when the path was also changed by someone else after T: between two
turns, or since the last turn (the workspace now differs from the agent's last checkpoint), and
when restoring would write into an auto-run path (``.vscode``, hooks, ``.envrc``, ...). Paths a
checkpoint did not capture (over the size limit, a repository of its own) are never written.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from engine.memory.kinds import Action, ConflictReason
from engine.memory.shadow import EMPTY_TREE, Entry, ShadowRepo

MAX_DIFF_BYTES = 1 << 20
"""Files larger than this (either side) are reported without a line diff."""


@dataclass(frozen=True)
class TurnCheckpoints:
    """A turn's checkpoints (commit ids; None when not taken)."""

    n: int
    before: str | None
    after: str | None
    undone: bool = False
    """A rewind already wrote its file changes back: later rewinds leave it out."""


@dataclass(frozen=True)
class FileChange:
    path: str
    action: Action
    diff: str
    binary: bool = False


def _action(old: Entry | None, new: Entry | None) -> Action:
    if old is None:
        return "created"
    if new is None:
        return "deleted"
    return "modified"


def _is_binary(data: bytes) -> bool:
    return b"\0" in data[:8000]


def unified_diff(path: str, old: bytes | None, new: bytes | None, modes: tuple[str, str]) -> str:
    """A ``git diff``-style unified diff of one file (``a/`` and ``b/`` prefixes)."""
    before = "/dev/null" if old is None else f"a/{path}"
    after = "/dev/null" if new is None else f"b/{path}"
    header = [f"--- {before}", f"+++ {after}"]
    if modes[0] and modes[1] and modes[0] != modes[1]:
        header.insert(0, f"old mode {modes[0]}\nnew mode {modes[1]}")
    old_text = (old or b"").decode("utf-8", "replace")
    new_text = (new or b"").decode("utf-8", "replace")
    lines = list(
        difflib.unified_diff(
            old_text.splitlines(keepends=True), new_text.splitlines(keepends=True), n=3
        )
    )[2:]
    body = []
    for line in lines:
        if line.endswith("\n"):
            body.append(line)
        else:
            body.append(line + "\n\\ No newline at end of file\n")
    return "\n".join(header) + "\n" + "".join(body)


def describe_changes(
    repo: ShadowRepo, old: str, new: str, *, max_bytes: int = MAX_DIFF_BYTES
) -> list[FileChange]:
    """Per file: what changed between two checkpoints, with a unified diff."""
    changed = repo.changed(old, new)
    wanted = [e[1] for pair in changed.values() for e in pair if e is not None]
    contents = repo.blobs(wanted)
    out: list[FileChange] = []
    for path in sorted(changed):
        old_entry, new_entry = changed[path]
        old_data = contents.get(old_entry[1]) if old_entry else None
        new_data = contents.get(new_entry[1]) if new_entry else None
        modes = (old_entry[0] if old_entry else "", new_entry[0] if new_entry else "")
        action = _action(old_entry, new_entry)
        sizes = [len(d) for d in (old_data, new_data) if d is not None]
        if any(_is_binary(d) for d in (old_data, new_data) if d is not None):
            text = f"Binary file {path} {action}\n"
            out.append(FileChange(path, action, text, binary=True))
        elif sizes and max(sizes) > max_bytes:
            text = f"{path}: {action}; too large to show as a diff ({max(sizes)} bytes)\n"
            out.append(FileChange(path, action, text))
        else:
            out.append(FileChange(path, action, unified_diff(path, old_data, new_data, modes)))
    return out


def turn_span(turns: Sequence[TurnCheckpoints], n: int, now: Callable[[], str]) -> tuple[str, str]:
    """(before, after) commits of turn ``n``: an *after* that was never taken is the next
    checkpoint (or ``now()``, a checkpoint of the workspace as it is)."""
    ordered = sorted((t for t in turns if t.before), key=lambda t: t.n)
    for i, turn in enumerate(ordered):
        if turn.n != n:
            continue
        assert turn.before is not None
        if turn.after:
            return turn.before, turn.after
        later = next((t.before for t in ordered[i + 1 :] if t.before), None)
        return turn.before, later or now()
    return EMPTY_TREE, EMPTY_TREE


@dataclass(frozen=True)
class Conflict:
    path: str
    reason: ConflictReason
    detail: str


@dataclass(frozen=True)
class Step:
    """One path to write back: its content at the checkpoint (None: delete it)."""

    path: str
    target: Entry | None
    expected: Entry | None
    """What the path holds now, as last recorded (checked again right before writing)."""
    autorun: bool = False


@dataclass
class RewindPlan:
    base: str
    """The checkpoint written back (the workspace just before the turn's first change)."""
    now: str
    """The checkpoint of the workspace taken before rewinding (to undo the rewind by hand)."""
    steps: list[Step] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    """(path, why) of paths that are never written."""


def plan_rewind(
    repo: ShadowRepo,
    turns: Sequence[TurnCheckpoints],
    n: int,
    now: str,
    is_autorun: Callable[[str], bool],
) -> RewindPlan | None:
    """What rewinding to just before turn ``n`` writes; None when no turn from ``n`` on
    changed anything. ``now`` is a checkpoint of the workspace as it is."""
    later = sorted((t for t in turns if t.n >= n and t.before and not t.undone), key=lambda t: t.n)
    if not later:
        return None
    base = later[0].before
    assert base is not None
    plan = RewindPlan(base, now)
    agent: set[str] = set()
    by_hand: set[str] = set()
    last_agent_state = base
    for i, turn in enumerate(later):
        assert turn.before is not None
        end = turn.after or (later[i + 1].before if i + 1 < len(later) else None) or now
        agent |= set(repo.changed(turn.before, end))
        if i > 0:  # between the previous turn's end and this turn's start
            by_hand |= set(repo.changed(last_agent_state, turn.before))
        last_agent_state = end
    by_hand |= set(repo.changed(last_agent_state, now))
    uncaptured = repo.uncaptured(base) | repo.uncaptured(now)
    target = repo.entries(base)
    current = repo.entries(now)
    for path in sorted(agent):
        if any(path == u or (u.endswith("/") and path.startswith(u)) for u in uncaptured):
            plan.skipped.append(
                (
                    path,
                    "not captured by a checkpoint (too large, or in a "
                    "repository of its own): left as it is",
                )
            )
            continue
        want, have = target.get(path), current.get(path)
        if want == have:
            continue
        autorun = is_autorun(path)
        if path in by_hand:
            plan.conflicts.append(
                Conflict(
                    path,
                    "changed_by_hand",
                    "changed outside this session's turns after the turn (by hand, or by "
                    "another session)",
                )
            )
        elif autorun and want is not None:
            plan.conflicts.append(
                Conflict(
                    path,
                    "autorun",
                    "an auto-run path (see docs/security.md): writing it back needs force",
                )
            )
        plan.steps.append(Step(path, want, have, autorun))
    return plan
