"""The approval broker: each pending approval has an unguessable id, belongs to one session, is
known before the editor is asked, and is decided at most once."""

from __future__ import annotations

import asyncio
import re

from engine.loop import ApprovalOutcome
from server.broker import ApprovalBroker

ALLOW = ApprovalOutcome("allow")
DENY = ApprovalOutcome("deny", "not now")


async def test_approval_ids_are_unique_and_unguessable() -> None:
    broker = ApprovalBroker()
    ids = [broker.register("s1", f"call_{i}").approval_id for i in range(200)]
    assert len(set(ids)) == len(ids)
    for approval_id in ids:
        # at least 128 random bits in URL-safe base64: 22 characters or more
        assert len(approval_id) >= 22
        assert re.fullmatch(r"[A-Za-z0-9_-]+", approval_id)


async def test_approval_is_known_as_soon_as_it_is_registered() -> None:
    broker = ApprovalBroker()
    pending = broker.register("s1", "call_1")
    # the editor may answer as soon as it is asked: the approval must already be findable
    assert broker.pending_for("s1") == [pending]
    assert pending.session_id == "s1"
    assert pending.tool_call_id == "call_1"
    assert broker.pending_for("s2") == []
    assert len(broker) == 1
    assert broker.resolve(pending.approval_id, "s1", ALLOW)
    assert await broker.wait(pending, 5) == ALLOW


async def test_first_decision_wins() -> None:
    broker = ApprovalBroker()
    pending = broker.register("s1", "call_1")
    assert broker.resolve(pending.approval_id, "s1", DENY) is True
    assert broker.resolve(pending.approval_id, "s1", ALLOW) is False
    assert await broker.wait(pending, 5) == DENY


async def test_decision_from_another_session_is_rejected_and_changes_nothing() -> None:
    broker = ApprovalBroker()
    pending = broker.register("victim", "call_1")
    assert broker.resolve(pending.approval_id, "attacker", ALLOW) is False
    assert not pending.future.done()
    assert broker.pending_for("victim") == [pending]
    # the rightful session can still decide
    assert broker.resolve(pending.approval_id, "victim", DENY) is True
    assert await broker.wait(pending, 5) == DENY


async def test_unknown_approval_id_is_rejected() -> None:
    broker = ApprovalBroker()
    pending = broker.register("s1", "call_1")
    assert broker.resolve("made-up-id", "s1", ALLOW) is False
    assert not pending.future.done()


async def test_unanswered_approval_times_out_and_is_forgotten() -> None:
    broker = ApprovalBroker()
    pending = broker.register("s1", "call_1")
    outcome = await broker.wait(pending, 0.01)
    assert outcome.decision == "timed_out"
    assert outcome.message is not None
    assert "0.01" in outcome.message
    assert broker.pending_for("s1") == []
    assert len(broker) == 0


async def test_answer_arriving_after_the_timeout_is_ignored() -> None:
    broker = ApprovalBroker()
    pending = broker.register("s1", "call_1")
    outcome = await broker.wait(pending, 0.01)
    assert broker.resolve(pending.approval_id, "s1", ALLOW) is False
    assert outcome.decision == "timed_out"
    assert pending.future.result().decision == "timed_out"


async def test_answer_arriving_while_waiting_is_returned() -> None:
    broker = ApprovalBroker()
    pending = broker.register("s1", "call_1")
    waiter = asyncio.create_task(broker.wait(pending, 30))
    await asyncio.sleep(0)
    assert broker.resolve(pending.approval_id, "s1", ALLOW)
    assert await asyncio.wait_for(waiter, 5) == ALLOW
    assert len(broker) == 0


async def test_cancelled_wait_withdraws_the_approval() -> None:
    broker = ApprovalBroker()
    pending = broker.register("s1", "call_1")
    other = broker.register("s1", "call_2")
    waiter = asyncio.create_task(broker.wait(pending, 30))
    await asyncio.sleep(0)
    waiter.cancel()
    await asyncio.gather(waiter, return_exceptions=True)
    assert waiter.cancelled()
    assert broker.pending_for("s1") == [other]
    # a late "allow" for the withdrawn approval cannot run anything
    assert broker.resolve(pending.approval_id, "s1", ALLOW) is False
