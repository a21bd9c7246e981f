"""Asking a person about one tool call: the request, the answer, what it grants, who decided.

Split from :mod:`engine.loop` (which calls :meth:`Asking.ask` for every call a verdict sends to
a person). Fail closed: an approver that raises, an answer that is not an allow, means the call
does not run; the model and the person are told which case it was.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from engine.approvals import ApprovalOutcome, ApprovalRequest, Approver, Decider, decider
from engine.edits import FileEdit
from engine.events import AgentEvent, StatusNote, ToolStatus
from engine.hooks import NO_HOOKS, TurnHooks
from engine.rules.book import RuleBook
from engine.rules.decision import Choice, DecidedBy
from engine.rules.policy import Verdict
from engine.turns import ToolCallRecord

logger = logging.getLogger(__name__)

DENIED_TEXT = "The user denied this tool call."

Refusal = tuple[ToolStatus, str]
"""How a call that may not run ends: its status, and what the model is told."""


class Asking:
    """The approvals of one turn."""

    def __init__(
        self,
        approve: Approver,
        emit: Callable[[AgentEvent], None],
        book: RuleBook,
        conversation_key: str,
        hooks: TurnHooks = NO_HOOKS,
    ) -> None:
        self.approve = approve
        self.emit = emit
        self.book = book
        self.conversation_key = conversation_key
        self.hooks = hooks

    async def ask(
        self,
        record: ToolCallRecord,
        verdict: Verdict,
        arguments: dict[str, Any],
        digest: str,
        edits: tuple[FileEdit, ...],
    ) -> tuple[Refusal | None, dict[str, str] | None]:
        """Ask for approval: ``(None, the user's versions of files)`` means run it; otherwise
        the status and what the model is told. Either way ``record.decided_by`` says who
        decided."""
        emit = self.emit
        emit(StatusNote(f"Waiting for approval: {record.name}"))
        request = ApprovalRequest(
            record.id,
            record.name,
            arguments,
            verdict.reason,
            digest,
            verdict.choices,
            verdict.unclear,
            edits,
        )
        self.hooks.approval_requested(record, verdict.reason)
        try:
            outcome = await self.approve(request)
        except asyncio.CancelledError:
            record.via = "cancel"
            self.hooks.approval(record, "cancelled", "cancel")
            raise
        except Exception as exc:  # fail closed: any doubt about an approval means no run
            logger.exception("approval callback failed")
            outcome = ApprovalOutcome("failed", f"the approval could not be obtained ({exc})")
        decision = outcome.decision
        record.via = decider(outcome)
        self.hooks.approval(record, decision, record.via, message=outcome.message)
        if outcome.allows:
            choice = outcome.choice or request.choice(
                "allow_session" if decision == "allow_session" else "allow_once"
            )
            if choice is None:
                choice = Choice("allow_once", "Allow once", "allow_once")
            detail = await self._grant(choice, digest)
            record.decided_by = DecidedBy("person", digest, choice=choice.kind, detail=detail)
            return None, outcome.edits
        if decision == "deny":
            record.decided_by = DecidedBy("person", digest, choice="deny", detail="denied")
            emit(StatusNote(f"Denied: {record.name}"))
            text = DENIED_TEXT
            if outcome.message:
                text += f" The user said: {outcome.message}"
            return ("denied", text), None
        why = outcome.message or "the approval failed"
        record.decided_by = DecidedBy("failure", digest, detail=f"{decision}: {why}")
        if decision == "timed_out":
            emit(StatusNote(f"No answer to the approval request for {record.name}: not run."))
            within = outcome.message or "the time limit"
            text = f"The tool call was not run: no approval arrived within {within}."
            return ("timed_out", text), None
        if decision == "cancelled":
            return ("cancelled", "The tool call was cancelled before it was approved."), None
        emit(StatusNote(f"Approval failed for {record.name} ({why}): not run."))
        return ("denied", f"The tool call was not run: {why}."), None

    async def _grant(self, choice: Choice, digest: str) -> str:
        """Record what an allow answer grants beyond this call; what decidedBy says about it."""
        detail, note = await self.book.record_answer(choice, digest, self.conversation_key)
        if note is not None:
            self.emit(StatusNote(note))
        return detail


def unasked_decider(decided: DecidedBy, bypass: bool) -> tuple[Decider, str | None]:
    """How a call nobody was asked about was decided, for the audit log, and the rule's id when
    a rule decided: a grant of this session, another rule, ``bypassPermissions``, or no confirm
    setting covering the tool."""
    if decided.kind == "rule":
        rule = decided.rules[0] if decided.rules else None
        if rule is not None and rule.source == "session":
            return "session_grant", rule.id
        return "rule", None if rule is None else rule.id
    if bypass:
        return "bypass", None
    return "not_required", None
