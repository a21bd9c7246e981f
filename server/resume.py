"""Opening a session saved by an earlier server: its conversation comes back, its "allow for
session" grants do not (the next turn's status stream says so)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from engine.memory.checkpoints import TurnCheckpoints
from engine.memory.store import StoredSession, StoreError
from engine.memory.workspace_memory import WorkspaceMemory
from server.errors import InvalidRequest, unknown_session
from server.protocol import BusySessionData, MemoryUnavailableData
from server.sessions import Session, SessionStore

if TYPE_CHECKING:
    from sandbox.box import Box

SESSION_ID = re.compile(r"s_[0-9a-f]{16}")
"""The shape of every session id a server hands out."""


def memory_unavailable(exc: Exception) -> InvalidRequest:
    return InvalidRequest(
        f"Gatehouse cannot use its data folder: {exc}",
        MemoryUnavailableData(detail=str(exc)),
    )


async def stored_session(memory: WorkspaceMemory, session_id: str) -> StoredSession | None:
    """A saved session as it is on disk (None: no such session, or sessions are not saved)."""
    if not SESSION_ID.fullmatch(session_id) or not memory.settings.sessions:
        return None
    try:
        return await memory.read(lambda db: db.load(session_id))
    except StoreError as exc:
        raise memory_unavailable(exc) from exc


async def open_saved(
    sessions: SessionStore,
    memory: WorkspaceMemory,
    make_box: Callable[[str], Box],
    session_id: str,
) -> Session:
    """The session, open in this server (opened from disk if it is not yet); raises -32602 for
    an unknown session and -32600 when another live server has it open."""
    existing = sessions.get(session_id)
    if existing is not None:
        return existing
    stored = await stored_session(memory, session_id)
    if stored is None:
        raise unknown_session(session_id)
    try:
        other = await memory.read(lambda db: db.claim(session_id, memory.owner))
    except StoreError as exc:
        raise memory_unavailable(exc) from exc
    if other is not None:
        raise InvalidRequest(
            f"Session {session_id} is open in another Gatehouse server (process "
            f"{other.split(':')[0]}); close it there to continue it here.",
            BusySessionData(session_id=session_id),
        )
    existing = sessions.get(session_id)  # opened by a concurrent request meanwhile
    if existing is not None:
        return existing
    session = sessions.restore(session_id, make_box)
    session.turns = max([stored.row.turns, *(t.n for t in stored.turns)])
    session.conversation.messages = [m for _seq, _turn, m in stored.messages]
    state = session.memory
    state.next_seq = stored.next_seq
    state.message_turns = [turn for _seq, turn, _m in stored.messages]
    state.checkpoints = [
        TurnCheckpoints(t.n, t.checkpoint_before, t.checkpoint_after, t.files_undone)
        for t in stored.turns
        if t.checkpoint_before
    ]
    earlier = sorted(
        {c.name for t in stored.turns for c in t.calls if c.decision == "allow_session"}
    )
    revoked = f" (it had allowed {', '.join(earlier)})" if earlier else ""
    session.resumed_note = (
        f"Resumed session {session_id} from an earlier run ({len(stored.turns)} turns). "
        f'Its "allow for session" approvals were not carried over{revoked}: every tool that '
        "needs approval will ask again."
    )
    return session
