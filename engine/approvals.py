"""What the agent loop asks a person, and the answers it understands.

The loop knows nothing of JSON-RPC: it awaits an :data:`Approver` callback with an
:class:`ApprovalRequest` and gets an :class:`ApprovalOutcome`. Only ``allow`` and
``allow_session`` run the call; every other outcome, including any exception raised by the
callback, means the call does not run.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

from engine.gate import ConfirmReason

ClientDecision = Literal["allow", "allow_session", "deny"]
"""What a person can answer (the wire's ``decision``)."""

Decision = Literal[ClientDecision, "timed_out", "cancelled", "failed"]
"""Every outcome of an approval: a person's answer, or why no answer counts."""

DecidedBy = Literal[
    "toolConfirm",
    "showMessageRequest",
    "session_grant",
    "bypass",
    "not_required",
    "timeout",
    "cancel",
    "error",
    "rule",
    "approver",
]
"""Who or what decided whether a call runs (the audit log's ``decidedBy``): the person, through
``toolConfirm`` or the ``window/showMessageRequest`` fallback; an ``allow_session`` grant of this
session; the request's ``bypassPermissions``; nobody, because the gate's flags ask nothing for
this tool (``not_required``); no answer in time (``timeout``); a cancel; a failed, malformed or
impossible prompt (``error``, never an approval); a rule (with its ``ruleId``); an approval
callback that does not say (``approver``: embedders and tests)."""


@dataclass(frozen=True)
class ApprovalRequest:
    tool_call_id: str
    name: str
    arguments: dict[str, Any]
    reason: ConfirmReason


@dataclass(frozen=True)
class ApprovalOutcome:
    """The answer to an approval request.

    ``deny`` carries the user's optional message; ``failed`` (an error reply, a malformed reply, a
    client that could not be asked) and ``cancelled`` carry what went wrong. Only ``allow`` and
    ``allow_session`` run the call.
    """

    decision: Decision
    message: str | None = None
    decided_by: DecidedBy | None = None
    """Who decided (None: the loop infers it from the decision, see :func:`decider`)."""
    rule_id: str | None = None
    """The rule that decided, when ``decided_by`` is ``rule``."""

    @property
    def allows(self) -> bool:
        return self.decision in ("allow", "allow_session")


Approver = Callable[[ApprovalRequest], Awaitable[ApprovalOutcome]]
"""The callback the loop awaits before a gated call runs."""


def decider(outcome: ApprovalOutcome) -> DecidedBy:
    """Who decided ``outcome``: what it says, else what its decision implies."""
    if outcome.decided_by is not None:
        return outcome.decided_by
    return {"timed_out": "timeout", "cancelled": "cancel", "failed": "error"}.get(
        outcome.decision, "approver"
    )  # type: ignore[return-value]
