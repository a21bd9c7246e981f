"""A turn's journal: the loop's hooks (:class:`engine.hooks.TurnHooks`) backed by memory.

Per turn it saves every message as the loop remembers it, every tool call with its decision,
the session's grants (for the record), takes the checkpoint before the first change and the one
after the turn, and writes the audit log: the approval of each call (who decided), the execution
(full arguments, their SHA-256 with the tool and working folder, isolation, network) fsynced
before the call runs, and how it ended (exit code, duration).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from engine.approvals import Decider, Decision
from engine.backends.base import Message
from engine.events import StatusNote
from engine.hooks import TurnHooks, changes_workspace
from engine.memory.audit import call_digest
from engine.memory.checkpoints import TurnCheckpoints
from engine.memory.shadow import ShadowError, Snapshot
from engine.memory.state import SessionState
from engine.memory.store import StoredCall
from engine.memory.workspace_memory import WorkspaceMemory
from engine.tools.base import Tool, ToolOutcome
from engine.turns import ToolCallRecord
from sandbox.info import SandboxInfo

logger = logging.getLogger(__name__)

MAX_LISTED = 5
"""Paths named in a "not captured" status line (then: "and N more")."""


def checkpoint_ref(session_id: str, n: int, which: str) -> str:
    return f"refs/gatehouse/{session_id}/{n}/{which}"


def not_captured_line(snapshot: Snapshot, max_file_bytes: int) -> str | None:
    lines = snapshot.not_captured(max_file_bytes)
    if not lines:
        return None
    shown = ", ".join(lines[:MAX_LISTED])
    more = f" and {len(lines) - MAX_LISTED} more" if len(lines) > MAX_LISTED else ""
    return f"Checkpoint taken; not captured (a rewind leaves them as they are): {shown}{more}."


class TurnJournal(TurnHooks):
    """One turn's hooks (see the module docs)."""

    def __init__(
        self,
        memory: WorkspaceMemory,
        state: SessionState,
        n: int,
        *,
        emit: Callable[[Any], None],
        sandbox: SandboxInfo,
    ) -> None:
        self.memory = memory
        self.state = state
        self.n = n
        self.emit = emit
        self.sandbox = sandbox
        self.before: Snapshot | None = None
        self._calls: dict[str, tuple[int, Decision | None, Decider | None]] = {}
        self.saving = memory.settings.sessions

    @property
    def session_id(self) -> str:
        return self.state.session_id

    @property
    def turn_id(self) -> str:
        return f"{self.session_id}:{self.n}"

    def _head(self) -> dict[str, Any]:
        return {
            "session": self.session_id,
            "turn": self.turn_id,
            "workspace": str(self.memory.workspace),
        }

    # --- the turn ---------------------------------------------------------------------------

    async def begin(self, prompt: str, *, model: str | None, settings: dict[str, Any]) -> None:
        """Record the turn's start (its messages follow as they come)."""
        if not self.saving:
            return
        state, n = self.state, self.n
        future = self.memory.write(
            "the session",
            lambda db: db.begin_turn(
                state.session_id,
                n,
                prompt,
                model=model,
                settings=settings,
                first_seq=state.next_seq,
                owner=self.memory.owner,
            ),
        )
        try:
            await asyncio.wrap_future(future)
        except Exception as exc:
            self.emit(
                StatusNote(
                    f"This session is not being saved ({exc}): it will be lost when the server "
                    "stops."
                )
            )

    async def end(self, stop_reason: str, text: str, model: str | None = None) -> None:
        """The turn is over: the checkpoint after it (if it changed anything), its result."""
        if self.before is not None:
            ref = checkpoint_ref(self.session_id, self.n, "after")
            try:
                after = await self.memory.snapshot(f"after turn {self.turn_id}", ref, ignored=False)
            except ShadowError as exc:
                logger.warning("no checkpoint after %s: %s", self.turn_id, exc)
                after = None
            if after is not None:
                self._set_checkpoint("after", after.commit)
        if self.saving:
            state, n = self.state, self.n
            self.memory.write(
                "the session",
                lambda db: db.end_turn(state.session_id, n, stop_reason, text, model=model),
            )
        # When the turn is answered, everything it did is on record (the audit log included).
        await self.memory.settled()

    def _set_checkpoint(
        self, which: str, commit: str, not_captured: list[str] | None = None
    ) -> None:
        checkpoints = self.state.checkpoints
        current = next((c for c in checkpoints if c.n == self.n), None)
        before = commit if which == "before" else (current.before if current else None)
        after = commit if which == "after" else (current.after if current else None)
        if current is not None:
            checkpoints.remove(current)
        checkpoints.append(TurnCheckpoints(self.n, before, after))
        if self.saving:
            session_id, n, listed = self.session_id, self.n, list(not_captured or [])
            self.memory.write(
                "the checkpoint", lambda db: db.set_checkpoint(session_id, n, which, commit, listed)
            )

    # --- the hooks --------------------------------------------------------------------------

    def message(self, message: Message) -> None:
        seq = self.state.next_seq
        self.state.next_seq += 1
        self.state.message_turns.append(self.n)
        if self.saving:
            session_id, n = self.session_id, self.n
            self.memory.write(
                "the conversation", lambda db: db.add_message(session_id, seq, n, message)
            )

    def approval_requested(self, call: ToolCallRecord, reason: str) -> None:
        self.memory.audit_record(
            {
                "type": "approval_request",
                **self._head(),
                "toolCallId": call.id,
                "tool": call.name,
                "arguments": call.arguments,
                "sha256": call_digest(call.name, call.arguments, str(self.memory.workspace)),
                "reason": reason,
            }
        )

    def approval(
        self,
        call: ToolCallRecord,
        decision: Decision,
        decided_by: Decider,
        *,
        message: str | None = None,
        rule_id: str | None = None,
    ) -> None:
        position = len(self._calls)
        self._calls[call.id] = (position, decision, decided_by)
        record: dict[str, Any] = {
            "type": "approval",
            **self._head(),
            "toolCallId": call.id,
            "tool": call.name,
            "sha256": call_digest(call.name, call.arguments, str(self.memory.workspace)),
            "decision": decision,
            "decidedBy": decided_by,
        }
        if rule_id is not None:
            record["ruleId"] = rule_id
        if message:
            record["message"] = message
        self.memory.audit_record(record)
        if decision == "allow_session":
            self.state.grants.setdefault(call.name, self.n)
        if decision == "allow_session" and self.saving:
            session_id, n, tool = self.session_id, self.n, call.name
            self.memory.write("the grant", lambda db: db.add_grant(session_id, n, tool))

    async def before_first_change(self, call: ToolCallRecord) -> str | None:
        off = self.memory.checkpoints_off
        if off is not None:
            if self.memory.settings.checkpoints:  # asked for, but impossible: say so
                self.emit(StatusNote(f"No checkpoint before {call.name}: {off}."))
            return None
        ref = checkpoint_ref(self.session_id, self.n, "before")
        try:
            snapshot = await self.memory.snapshot(f"before turn {self.turn_id}", ref)
        except ShadowError as exc:
            return (
                f"the checkpoint before this turn's first change could not be taken ({exc}), "
                "so nothing was changed (set memory.checkpoints to false to run without them)"
            )
        self.before = snapshot
        listed = snapshot.not_captured(self.memory.settings.max_file_bytes)
        self._set_checkpoint("before", snapshot.commit, listed)
        line = not_captured_line(snapshot, self.memory.settings.max_file_bytes)
        if line:
            self.emit(StatusNote(line))
        return None

    async def before_run(
        self, call: ToolCallRecord, tool: Tool, decided_by: Decider, bypass: bool
    ) -> str | None:
        level = "none" if bypass else self.sandbox.level
        record = {
            "type": "execution",
            **self._head(),
            "toolCallId": call.id,
            "tool": call.name,
            "arguments": call.arguments,
            "sha256": call_digest(call.name, call.arguments, str(self.memory.workspace)),
            "cwd": str(self.memory.workspace),
            "isolation": level,
            "network": True if bypass else self.sandbox.network,
            "decidedBy": decided_by,
        }
        if not changes_workspace(tool):
            self.memory.audit_record(record)  # written in order; nothing waits for it
            return None
        problem = await self.memory.audit_now(record)
        if problem is None:
            return None
        return f"its audit record could not be written ({problem}); code is not run without one"

    def after_run(self, call: ToolCallRecord, outcome: ToolOutcome, seconds: float) -> None:
        record: dict[str, Any] = {
            "type": "execution_end",
            **self._head(),
            "toolCallId": call.id,
            "tool": call.name,
            "exitCode": outcome.exit_code,
            "failed": outcome.failed,
            "durationMs": round(seconds * 1000, 1),
        }
        if outcome.sandbox is not None:
            record["isolation"] = outcome.sandbox.level
            record["network"] = outcome.sandbox.network
        if outcome.protected:
            record["protected"] = [{"path": p.path, "action": p.action} for p in outcome.protected]
        self.memory.audit_record(record)

    def call_ended(self, call: ToolCallRecord, result: str) -> None:
        position, decision, decided_by = self._calls.get(call.id, (len(self._calls), None, None))
        self._calls.setdefault(call.id, (position, decision, decided_by))
        if not self.saving:
            return
        stored = StoredCall(
            call.id,
            call.name,
            dict(call.arguments),
            call.status,
            call.exit_code,
            result,
            decision,
            decided_by,
        )
        session_id, n = self.session_id, self.n
        self.memory.write(
            "the tool call", lambda db: db.record_call(session_id, n, position, stored)
        )
