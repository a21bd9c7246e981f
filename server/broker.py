"""The confirmation broker: every approval that is waiting for a person.

An approval is registered *before* the client is asked (so an answer can never arrive for an
approval the server does not know), is identified by an unguessable ``approvalId``, belongs to one
session, and is decided at most once: the first decision wins, later ones are ignored.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from dataclasses import dataclass, field

from engine.loop import ApprovalOutcome

logger = logging.getLogger(__name__)


@dataclass
class PendingApproval:
    approval_id: str
    session_id: str
    tool_call_id: str
    future: asyncio.Future[ApprovalOutcome] = field(repr=False)


class ApprovalBroker:
    def __init__(self) -> None:
        self._pending: dict[str, PendingApproval] = {}

    def register(self, session_id: str, tool_call_id: str) -> PendingApproval:
        approval_id = secrets.token_urlsafe(24)  # 192 bits
        future: asyncio.Future[ApprovalOutcome] = asyncio.get_running_loop().create_future()
        pending = PendingApproval(approval_id, session_id, tool_call_id, future)
        self._pending[approval_id] = pending
        return pending

    def resolve(self, approval_id: str, session_id: str, outcome: ApprovalOutcome) -> bool:
        """Decide a pending approval. False (and nothing changes) when it is unknown, already
        decided, or belongs to another session."""
        pending = self._pending.get(approval_id)
        if pending is None or pending.future.done():
            logger.info("ignored a decision for approval %s: no longer pending", approval_id[:8])
            return False
        if pending.session_id != session_id:
            logger.warning(
                "rejected a decision for approval %s from another session", approval_id[:8]
            )
            return False
        pending.future.set_result(outcome)
        return True

    async def wait(self, pending: PendingApproval, timeout_seconds: float) -> ApprovalOutcome:
        """Wait for the decision; ``timed_out`` after ``timeout_seconds``. Always unregisters."""
        try:
            return await asyncio.wait_for(asyncio.shield(pending.future), timeout_seconds)
        except TimeoutError:
            self.resolve(
                pending.approval_id,
                pending.session_id,
                ApprovalOutcome("timed_out", f"{timeout_seconds:g} seconds"),
            )
            return pending.future.result()
        finally:
            self.discard(pending)

    def discard(self, pending: PendingApproval) -> None:
        if not pending.future.done():
            pending.future.cancel()
        self._pending.pop(pending.approval_id, None)

    def pending_for(self, session_id: str) -> list[PendingApproval]:
        return [p for p in self._pending.values() if p.session_id == session_id]

    def __len__(self) -> int:
        return len(self._pending)
