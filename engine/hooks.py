"""What a turn reports to while it runs: the seam between the agent loop and Gatehouse's memory.

The loop calls these at fixed points; this base class does nothing, so the loop runs the same
with or without memory (tests, embedders). The server's implementation
(:class:`engine.memory.journal.TurnJournal`) saves the conversation, takes checkpoints and
writes the audit log.

The order for one call that runs::

    approval_requested(...)        the gate asks about it (only when it does)
    approval(...)                  how it was allowed (asked, a session grant, bypass, no prompt)
    before_first_change(...)       once per turn, before the first call that may change files
    before_run(...)                the audit record of the execution, on disk before it starts
    after_run(...)                 how it ended
    call_ended(...)                its result (every call, run or not)

``before_first_change`` and ``before_run`` may refuse (they return the reason): the call then
does not run, and the model and the person are told why (fail closed).

**Edit tools** (tool kind ``edit``) need nothing more: a call of any tool whose kind is in
:data:`CHANGING_KINDS` gets ``before_first_change`` and a waited-for ``before_run`` from the
loop. Code that changes the workspace outside a tool's ``run`` (for instance writing a version of
a file the person edited in the approval prompt) must run after ``before_run`` returned None, in
the same call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.approvals import Decider, Decision

if TYPE_CHECKING:
    from engine.backends.base import Message
    from engine.tools.base import Tool, ToolOutcome
    from engine.turns import ToolCallRecord

CHANGING_KINDS: frozenset[str] = frozenset({"execute", "edit"})
"""Tool kinds whose calls may change the workspace: a checkpoint is taken before the first of
them in a turn, and each is refused if its audit record cannot be written."""


def changes_workspace(tool: Tool) -> bool:
    return tool.kind in CHANGING_KINDS


class TurnHooks:
    """A turn's observer. Every method is a no-op here."""

    def message(self, message: Message) -> None:
        """``message`` joined the conversation (the prompt, a model turn, a tool result)."""

    def approval_requested(self, call: ToolCallRecord, reason: str) -> None:
        """The gate asks whether ``call`` may run (``reason``: why it asks); the outcome follows
        in :meth:`approval`, unless the server dies first."""

    def approval(
        self,
        call: ToolCallRecord,
        decision: Decision,
        decided_by: Decider,
        *,
        message: str | None = None,
        rule_id: str | None = None,
    ) -> None:
        """How a call was decided (asked or not)."""

    async def before_first_change(self, call: ToolCallRecord) -> str | None:
        """The workspace is about to change for the first time this turn; None, or why the
        call must not run."""
        return None

    async def before_run(
        self, call: ToolCallRecord, tool: Tool, decided_by: Decider, bypass: bool
    ) -> str | None:
        """``call`` is about to run; None (its record is written), or why it must not run."""
        return None

    def after_run(self, call: ToolCallRecord, outcome: ToolOutcome, seconds: float) -> None:
        """``call`` ran (or failed to start) and produced ``outcome``."""

    def call_ended(self, call: ToolCallRecord, result: str) -> None:
        """``call`` is over (run, refused, denied or cancelled); ``result`` is what the model
        receives."""


NO_HOOKS = TurnHooks()
