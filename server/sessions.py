"""Chat sessions: a conversation, its session-wide approvals, its box, and at most one running
turn."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from engine.turns import Conversation, TurnControl

if TYPE_CHECKING:
    from sandbox.box import Box


@dataclass
class Session:
    session_id: str
    box: Box
    """Where this session's approved code runs (bound when the session starts)."""
    conversation: Conversation = field(default_factory=Conversation)
    turns: int = 0
    active: TurnControl | None = None
    active_turn_id: str | None = None

    @property
    def busy(self) -> bool:
        return self.active is not None

    def next_turn_id(self) -> str:
        self.turns += 1
        return f"{self.session_id}:{self.turns}"


class SessionStore:
    def __init__(self) -> None:
        self._sessions: dict[str, Session] = {}

    def create(self, make_box: Callable[[str], Box]) -> Session:
        """A new session; ``make_box(session_id)`` binds where its code runs."""
        session_id = "s_" + secrets.token_hex(8)
        session = Session(session_id, make_box(session_id))
        self._sessions[session.session_id] = session
        return session

    def get(self, session_id: str) -> Session | None:
        return self._sessions.get(session_id)

    def all(self) -> list[Session]:
        return list(self._sessions.values())
