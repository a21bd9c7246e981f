"""The order in which the confirm flags and the rules decide a call.

For a call whose arguments are valid, in this order (the first step that decides, decides):

1. a matching **deny** rule (any source): the call is denied, nobody is asked — also under
   ``bypassPermissions``;
2. ``bypassPermissions``: the call runs, nobody is asked;
3. a matching **ask** rule: a person is asked, even when no confirm flag covers the tool, and no
   allow rule can answer it (ask wins over allow);
4. the seed's gate (:meth:`engine.gate.GatePolicy.needs_confirm`): when no flag covers the call,
   it runs, nobody is asked;
5. **allow** rules (built-in, user, session grants; never the workspace file's): when they allow
   every part of the call, it runs, nobody is asked;
6. otherwise a person is asked, with the choices of :func:`engine.rules.decision.choices_for`.

So rules never turn a ``confirm*`` flag off: an allow rule only answers a prompt the flags ask
for (step 5 comes after step 4), and deny and ask rules only add refusals and prompts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from engine.gate import ConfirmReason, GatePolicy
from engine.rules.decision import Choice, DecidedBy, choices_for, propose, source_words
from engine.rules.matching import RuleIndex, subject_for
from engine.rules.model import Rule

if TYPE_CHECKING:
    from engine.tools.base import Tool

Outcome = Literal["run", "ask", "deny"]


@dataclass(frozen=True)
class Verdict:
    outcome: Outcome
    decided_by: DecidedBy | None = None
    """Set when no person is asked (``run`` or ``deny``)."""
    reason: ConfirmReason = "code_execution"
    """Why a person is asked (``ask``)."""
    choices: tuple[Choice, ...] = ()
    unclear: tuple[str, ...] = ()
    """Why rules could not allow a terminal command (shown with the prompt)."""


def rules_text(rules: Sequence[Rule]) -> str:
    parts = [f"{source_words(r.source)} rule {r.describe()}" for r in rules]
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def decide(
    gate: GatePolicy,
    tool: Tool,
    arguments: dict[str, object],
    index: RuleIndex,
    digest: str,
    *,
    can_remember: bool = True,
) -> Verdict:
    """Decide a call as the module docs say. ``can_remember``: whether ``allow_always`` can be
    written (a user data folder exists)."""
    subject = subject_for(tool.name, arguments)
    matches = index.match(subject)
    if matches.deny:
        return Verdict(
            "deny",
            DecidedBy(
                "rule",
                digest,
                rules=matches.deny[:1],
                detail=f"denied by {rules_text(matches.deny[:1])}",
            ),
        )
    if gate.bypass_permissions:
        return Verdict(
            "run", DecidedBy("settings", digest, detail="bypassPermissions: nobody is asked")
        )
    flagged = gate.needs_confirm(tool)
    unclear = subject.command.unclear if subject.command is not None else ()
    if matches.ask:
        return Verdict(
            "ask",
            reason=gate.reason(tool) if flagged else "ask_rule",
            choices=choices_for(None, False),
            unclear=unclear,
        )
    if not flagged:
        return Verdict(
            "run",
            DecidedBy("settings", digest, detail=f"no confirm setting covers the {tool.name} tool"),
        )
    if matches.allow:
        return Verdict(
            "run",
            DecidedBy(
                "rule",
                digest,
                rules=matches.allow,
                detail=f"allowed by {rules_text(matches.allow)}",
            ),
        )
    proposal = propose(tool.name, tool.kind, subject.command, arguments)
    choices = choices_for(proposal, True)
    if not can_remember:
        choices = tuple(c for c in choices if c.kind != "allow_always")
    return Verdict("ask", reason=gate.reason(tool), choices=choices, unclear=unclear)
