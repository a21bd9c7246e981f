"""What a session's memory keeps between turns: light, so that a server can hold it for every
session without loading the memory's machinery (:mod:`engine.memory.journal`) before the first
turn."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine.memory.checkpoints import TurnCheckpoints


@dataclass
class SessionState:
    """What a session's memory needs between turns."""

    session_id: str
    next_seq: int = 0
    checkpoints: list[TurnCheckpoints] = field(default_factory=list)
    message_turns: list[int] = field(default_factory=list)
    """The turn of each message of the conversation, in order (to rewind it)."""
    grants: dict[str, int] = field(default_factory=dict)
    """Tools allowed for the session in this server, and the turn that allowed each."""
