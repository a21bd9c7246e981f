"""A turn's vocabulary: what a request asks for, what a session remembers, how a turn is
stopped and what it produced. Light on purpose: the server holds these for every session without
loading the agent loop itself (:mod:`engine.loop`) until the first turn runs."""

from __future__ import annotations

import asyncio
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.backends.base import GenerationOptions, Message
from engine.edits import ReadLedger
from engine.events import StopReason, ToolStatus
from engine.gate import GatePolicy

if TYPE_CHECKING:  # rules load with the first turn
    from engine.approvals import Decider
    from engine.rules.decision import DecidedBy
    from engine.rules.model import Rule


@dataclass(frozen=True)
class TurnRequest:
    prompt: str
    policy: GatePolicy = field(default_factory=GatePolicy)
    tools_enabled: bool = True
    enabled_tools: frozenset[str] | None = None
    max_tool_calls: int = 25
    tool_rounds: int | None = None
    """Model turns that may call tools; after that many the model answers without tools (small
    models answer best from one round of results). None: no limit."""
    options: GenerationOptions = field(default_factory=GenerationOptions)
    tool_timeout_seconds: float = 120.0
    rules: tuple[Rule, ...] = ()
    """The built-in, user and workspace rules in force (:mod:`engine.rules.store`); the
    session's grants are the conversation's."""
    user_rules_folder: Path | None = None
    """Where "Always allow" writes a user rule (None: it is not offered)."""
    rules_scope: str | None = None
    """The workspace a remembered rule applies in."""


@dataclass
class ToolCallRecord:
    id: str
    name: str
    arguments: dict[str, Any]
    status: ToolStatus
    exit_code: int | None = None
    decided_by: DecidedBy | None = None
    """Who decided whether it ran: which rule (id, source), which person's answer, or which
    setting, with the SHA-256 of what was decided. None: it never reached the gate (invalid)."""
    via: Decider | None = None
    """How it was decided, for the audit log (``toolConfirm``, ``session_grant``, ``rule``...)."""


@dataclass
class TurnResult:
    stop_reason: StopReason
    text: str
    tool_calls: list[ToolCallRecord]


@dataclass
class Conversation:
    """What one session remembers between requests."""

    messages: list[Message] = field(default_factory=list)
    grants: list[Rule] = field(default_factory=list)
    """Rules granted with "Allow ... in this session" (source ``session``): later calls they
    allow run without asking."""
    key: str = field(default_factory=lambda: secrets.token_hex(8))
    """Tells this conversation's grants from another's (part of a session rule's id)."""
    reads: ReadLedger = field(default_factory=ReadLedger)
    """The files the model read (``read_file``), for the edit tools' read-before-edit rule."""

    @property
    def allowed_tools(self) -> set[str]:
        """The tools with at least one session grant."""
        return {rule.tool for rule in self.grants}


class TurnControl:
    """Lets a transport cancel a running turn so that it *returns* ``stop_reason: cancelled``."""

    def __init__(self) -> None:
        self.cancel_requested = False
        self._task: asyncio.Task[Any] | None = None

    def bind(self, task: asyncio.Task[Any]) -> None:
        self._task = task

    @property
    def task(self) -> asyncio.Task[Any] | None:
        """The task that runs the turn (None before it is bound)."""
        return self._task

    def cancel(self) -> bool:
        """Request cancellation; False when nothing is running."""
        if self._task is None or self._task.done():
            return False
        if self.cancel_requested:
            return True  # already cancelling: do not interrupt the clean-up
        self.cancel_requested = True
        self._task.cancel()
        return True
