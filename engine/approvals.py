"""What the agent loop asks a person, and the answers it understands.

The loop knows nothing of JSON-RPC: it awaits an :data:`Approver` callback with an
:class:`ApprovalRequest` and gets an :class:`ApprovalOutcome`. Only ``allow`` and
``allow_session`` run the call; every other outcome, including any exception raised by the
callback, means the call does not run.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from engine.edits import FileEdit
from engine.gate import ConfirmReason

if TYPE_CHECKING:  # the protocol imports this module: keep it light
    from engine.rules.decision import Choice

ClientDecision = Literal["allow", "allow_session", "deny"]
"""What a person can answer (the wire's ``decision``)."""

Decision = Literal[ClientDecision, "timed_out", "cancelled", "failed"]
"""Every outcome of an approval: a person's answer, or why no answer counts."""

Decider = Literal[
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
"""How a call was decided (the audit log's ``decidedBy``; the wire's ``tool_end.decidedBy`` is
the fuller :class:`engine.rules.decision.DecidedBy`): the person, through
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
    content_sha256: str = ""
    """What is approved (:mod:`sandbox.binding`): the executor refuses anything else."""
    choices: tuple[Choice, ...] = ()
    """The answers offered, Deny first (:func:`engine.rules.decision.choices_for`)."""
    unclear: tuple[str, ...] = ()
    """Why rules could not allow this command (shown to the person)."""
    edits: tuple[FileEdit, ...] = ()
    """For an edit tool: every file it would change, with its diff (a person reviews these)."""

    def choice(self, choice_id: str) -> Choice | None:
        return next((c for c in self.choices if c.id == choice_id), None)


@dataclass(frozen=True)
class ApprovalOutcome:
    """The answer to an approval request.

    ``deny`` carries the user's optional message; ``failed`` (an error reply, a malformed reply, a
    client that could not be asked) and ``cancelled`` carry what went wrong. Only ``allow`` and
    ``allow_session`` run the call.
    """

    decision: Decision
    message: str | None = None
    choice: Choice | None = None
    """The choice the person made (an allow decision always has one: allow once when the
    client named none)."""
    edits: dict[str, str] | None = None
    """With ``allow``/``allow_session`` of an edit: the user's own version of some of its files
    (path -> full text), written instead of the proposal's."""
    via: Decider | None = None
    """How the answer came (``toolConfirm``, ``showMessageRequest``...; None: inferred from the
    decision, see :func:`decider`)."""

    @property
    def allows(self) -> bool:
        return self.decision in ("allow", "allow_session")


Approver = Callable[[ApprovalRequest], Awaitable[ApprovalOutcome]]
"""The callback the loop awaits before a gated call runs."""


def decider(outcome: ApprovalOutcome) -> Decider:
    """How ``outcome`` was decided: what it says, else what its decision implies."""
    if outcome.via is not None:
        return outcome.via
    return {"timed_out": "timeout", "cancelled": "cancel", "failed": "error"}.get(
        outcome.decision, "approver"
    )  # type: ignore[return-value]
