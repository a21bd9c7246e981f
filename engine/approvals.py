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

from engine.gate import ConfirmReason

if TYPE_CHECKING:  # the protocol imports this module: keep it light
    from engine.rules.decision import Choice

ClientDecision = Literal["allow", "allow_session", "deny"]
"""What a person can answer (the wire's ``decision``)."""

Decision = Literal[ClientDecision, "timed_out", "cancelled", "failed"]
"""Every outcome of an approval: a person's answer, or why no answer counts."""


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

    @property
    def allows(self) -> bool:
        return self.decision in ("allow", "allow_session")


Approver = Callable[[ApprovalRequest], Awaitable[ApprovalOutcome]]
"""The callback the loop awaits before a gated call runs."""
