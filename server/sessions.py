"""Chat sessions: a conversation, its session-wide approvals, its box, and at most one running
turn. A session saved by an earlier server comes back through :meth:`SessionStore.restore`."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from engine.memory.state import SessionState
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
    memory: SessionState = field(init=False)
    """What its memory needs between turns (message numbers, checkpoints, grants)."""
    resumed_note: str | None = None
    """Said in the status stream at the start of the next turn (a session from an earlier
    server: its grants were not revived)."""

    def __post_init__(self) -> None:
        self.memory = SessionState(self.session_id)

    @property
    def busy(self) -> bool:
        return self.active is not None

    def next_turn_id(self) -> str:
        self.turns += 1
        return f"{self.session_id}:{self.turns}"


def turn_number(session_id: str, turn_id: str) -> int | None:
    """The number of one of the session's turn ids (``<session>:<n>``), else None."""
    prefix, _, number = turn_id.rpartition(":")
    if prefix != session_id or not number.isdigit():
        return None
    return int(number)


class SessionStore:
    def __init__(self) -> None:
        self._sessions: dict[str, Session] = {}

    def create(self, make_box: Callable[[str], Box]) -> Session:
        """A new session; ``make_box(session_id)`` binds where its code runs."""
        session_id = "s_" + secrets.token_hex(8)
        session = Session(session_id, make_box(session_id))
        self._sessions[session.session_id] = session
        return session

    def restore(self, session_id: str, make_box: Callable[[str], Box]) -> Session:
        """A session saved by an earlier server, opened here (its caller fills it in)."""
        session = Session(session_id, make_box(session_id))
        self._sessions[session_id] = session
        return session

    def get(self, session_id: str) -> Session | None:
        return self._sessions.get(session_id)

    def remove(self, session_id: str) -> None:
        self._sessions.pop(session_id, None)

    def all(self) -> list[Session]:
        return list(self._sessions.values())
