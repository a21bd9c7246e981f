"""Chat sessions: a conversation, its session-wide approvals, and at most one running turn."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field

from engine.loop import Conversation, TurnControl


@dataclass
class Session:
    session_id: str
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

    def create(self) -> Session:
        session = Session("s_" + secrets.token_hex(8))
        self._sessions[session.session_id] = session
        return session

    def get(self, session_id: str) -> Session | None:
        return self._sessions.get(session_id)

    def all(self) -> list[Session]:
        return list(self._sessions.values())
