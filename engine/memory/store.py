"""Sessions on disk: one SQLite database per workspace (WAL), written as a turn happens.

What is kept: every message of the conversation (the model's own words, tool results), every
tool call with its arguments, result and decision (and who decided), the "allow for session"
grants (for the record: they are never revived), and each turn's prompt, model, settings, stop
reason and checkpoints. A message is committed as soon as the loop remembers it, so ``kill -9``
loses at most what was in flight.

Durability: WAL with ``synchronous=NORMAL``: a commit survives the process being killed (the
write is in the operating system's hands); only a power cut can lose the last commits, never
corrupt the database. Why SQLite rather than JSONL is in ``docs/memory.md``.

Every method blocks: the server calls them from one worker thread per database
(:class:`~engine.memory.journal.DiskWorker`). A session is used by one server at a time: the
server that opens it writes its ``pid`` and start time as the owner, and another live server is
refused (a dead owner's claim is taken over).
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.backends.base import Message
from engine.memory.owners import owner_alive, process_identity
from engine.memory.schema import SCHEMA, SCHEMA_VERSION, StoreError, Transaction

__all__ = [
    "SessionDB",
    "SessionRow",
    "StoreError",
    "StoredCall",
    "StoredSession",
    "StoredTurn",
    "make_title",
    "owner_alive",
    "process_identity",
]

TITLE_LENGTH = 80


@dataclass(frozen=True)
class SessionRow:
    session_id: str
    title: str
    created: float
    updated: float
    turns: int
    model: str | None


@dataclass
class StoredCall:
    call_id: str
    name: str
    arguments: dict[str, Any]
    status: str | None
    exit_code: int | None
    result: str | None
    decision: str | None
    decided_by: str | None


@dataclass
class StoredTurn:
    n: int
    prompt: str
    started: float
    ended: float | None
    stop_reason: str | None
    text: str | None
    model: str | None
    first_seq: int
    rewound: bool
    files_undone: bool
    """Its file changes were written back by a rewind."""
    checkpoint_before: str | None
    checkpoint_after: str | None
    not_captured: list[str]
    calls: list[StoredCall] = field(default_factory=list)


@dataclass
class StoredSession:
    row: SessionRow
    turns: list[StoredTurn]
    messages: list[tuple[int, int, Message]]
    """(seq, turn, message) of every message of the turns not rewound, in order."""
    next_seq: int


def make_title(prompt: str) -> str:
    line = next((part.strip() for part in prompt.splitlines() if part.strip()), "")
    return line if len(line) <= TITLE_LENGTH else line[: TITLE_LENGTH - 1] + "…"


class SessionDB:
    """One workspace's sessions database (blocking; one thread at a time)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            self._db = sqlite3.connect(
                path, timeout=10.0, isolation_level=None, check_same_thread=False
            )
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("PRAGMA foreign_keys=ON")
            self._create_schema()
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the sessions database {path}: {exc}") from exc
        with contextlib.suppress(OSError):
            os.chmod(path, 0o600)

    def _create_schema(self) -> None:
        found = self._db.execute(
            "SELECT name FROM sqlite_master WHERE type='table' AND name='meta'"
        ).fetchone()
        if found is not None:
            row = self._db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
            version = int(row[0]) if row else 0
            if version > SCHEMA_VERSION:
                raise StoreError(
                    f"{self.path} was written by a newer Gatehouse (schema {version}); "
                    "update Gatehouse to open these sessions"
                )
            if version == SCHEMA_VERSION:
                return
        self._db.executescript("BEGIN;" + SCHEMA + "COMMIT;")
        with self._tx():
            self._db.execute(
                "INSERT OR REPLACE INTO meta(key, value) VALUES ('schema', ?)",
                (str(SCHEMA_VERSION),),
            )

    def close(self) -> None:
        self._db.close()

    def _tx(self, *, read: bool = False) -> Transaction:
        return Transaction(self._db, "BEGIN" if read else "BEGIN IMMEDIATE")

    # --- writing ----------------------------------------------------------------------------

    def claim(self, session_id: str, owner: str) -> str | None:
        """Make ``owner`` the session's owner; the other live owner that holds it, if any."""
        with self._tx():
            query = "SELECT owner FROM sessions WHERE id=?"
            row = self._db.execute(query, (session_id,)).fetchone()
            if row is None:
                return None
            current = row[0]
            if current and current != owner and owner_alive(current):
                return str(current)
            self._db.execute("UPDATE sessions SET owner=? WHERE id=?", (owner, session_id))
        return None

    def release(self, owner: str) -> None:
        with self._tx():
            self._db.execute("UPDATE sessions SET owner=NULL WHERE owner=?", (owner,))

    def begin_turn(
        self,
        session_id: str,
        n: int,
        prompt: str,
        *,
        model: str | None,
        settings: dict[str, Any],
        first_seq: int,
        owner: str,
        now: float | None = None,
    ) -> None:
        """Record a turn's start (and the session, on its first turn)."""
        now = time.time() if now is None else now
        with self._tx():
            self._db.execute(
                "INSERT INTO sessions(id, title, created, updated, turns, model, owner) "
                "VALUES (?, ?, ?, ?, 0, ?, ?) ON CONFLICT(id) DO NOTHING",
                (session_id, make_title(prompt), now, now, model, owner),
            )
            self._db.execute(
                "INSERT OR REPLACE INTO turns(session_id, n, prompt, started, model, settings, "
                "first_seq) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (session_id, n, prompt, now, model, json.dumps(settings), first_seq),
            )
            self._db.execute(
                "UPDATE sessions SET updated=?, turns=MAX(turns, ?), model=? WHERE id=?",
                (now, n, model, session_id),
            )

    def add_message(self, session_id: str, seq: int, turn: int, message: Message) -> None:
        with self._tx():
            self._db.execute(
                "INSERT OR REPLACE INTO messages(session_id, seq, turn, role, content, name, "
                "tool_call_id, status) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    session_id,
                    seq,
                    turn,
                    message.role,
                    message.content,
                    message.name,
                    message.tool_call_id,
                    message.status,
                ),
            )

    def record_call(self, session_id: str, turn: int, position: int, call: StoredCall) -> None:
        with self._tx():
            self._db.execute(
                "INSERT OR REPLACE INTO tool_calls(session_id, turn, call_id, position, name, "
                "arguments, status, exit_code, result, decision, decided_by) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    session_id,
                    turn,
                    call.call_id,
                    position,
                    call.name,
                    json.dumps(call.arguments, ensure_ascii=False),
                    call.status,
                    call.exit_code,
                    call.result,
                    call.decision,
                    call.decided_by,
                ),
            )

    def add_grant(self, session_id: str, turn: int, tool: str) -> None:
        with self._tx():
            self._db.execute(
                "INSERT OR REPLACE INTO grants(session_id, turn, tool, granted) VALUES (?,?,?,?)",
                (session_id, turn, tool, time.time()),
            )

    def set_checkpoint(
        self, session_id: str, n: int, which: str, commit: str, not_captured: list[str]
    ) -> None:
        column = {"before": "checkpoint_before", "after": "checkpoint_after"}[which]
        with self._tx():
            self._db.execute(
                f"UPDATE turns SET {column}=? WHERE session_id=? AND n=?",  # noqa: S608
                (commit, session_id, n),
            )
            if which == "before":
                self._db.execute(
                    "UPDATE turns SET not_captured=? WHERE session_id=? AND n=?",
                    (json.dumps(not_captured), session_id, n),
                )

    def end_turn(
        self,
        session_id: str,
        n: int,
        stop_reason: str,
        text: str,
        *,
        model: str | None = None,
        now: float | None = None,
    ) -> None:
        """Record how a turn ended (and the model that ran it, once it is known)."""
        now = time.time() if now is None else now
        with self._tx():
            self._db.execute(
                "UPDATE turns SET ended=?, stop_reason=?, text=?, model=COALESCE(?, model) "
                "WHERE session_id=? AND n=?",
                (now, stop_reason, text, model, session_id, n),
            )
            self._db.execute(
                "UPDATE sessions SET updated=?, model=COALESCE(?, model) WHERE id=?",
                (now, model, session_id),
            )

    def rewind_conversation(self, session_id: str, n: int) -> None:
        """Turns ``n`` and later leave the conversation (kept, marked rewound)."""
        with self._tx():
            self._db.execute(
                "UPDATE turns SET rewound=1 WHERE session_id=? AND n>=?", (session_id, n)
            )
            self._db.execute("DELETE FROM grants WHERE session_id=? AND turn>=?", (session_id, n))
            self._db.execute("UPDATE sessions SET updated=? WHERE id=?", (time.time(), session_id))

    def undo_files(self, session_id: str, n: int) -> None:
        """Turns ``n`` and later had their file changes written back (a files rewind): a later
        rewind no longer counts them as the agent's."""
        with self._tx():
            self._db.execute(
                "UPDATE turns SET files_undone=1 WHERE session_id=? AND n>=?", (session_id, n)
            )

    def delete(self, session_id: str) -> bool:
        with self._tx():
            cursor = self._db.execute("DELETE FROM sessions WHERE id=?", (session_id,))
        return cursor.rowcount > 0

    # --- reading ----------------------------------------------------------------------------

    def sessions(self) -> list[SessionRow]:
        """Every session, the most recently active first."""
        rows = self._db.execute(
            "SELECT id, title, created, updated, turns, model FROM sessions ORDER BY updated DESC"
        ).fetchall()
        return [SessionRow(*row) for row in rows]

    def session(self, session_id: str) -> SessionRow | None:
        row = self._db.execute(
            "SELECT id, title, created, updated, turns, model FROM sessions WHERE id=?",
            (session_id,),
        ).fetchone()
        return None if row is None else SessionRow(*row)

    def load(self, session_id: str) -> StoredSession | None:
        """A session with its turns, tool calls and the messages of the turns not rewound."""
        with self._tx(read=True):  # one consistent read
            row = self.session(session_id)
            if row is None:
                return None
            turns = [
                StoredTurn(
                    n=r[0],
                    prompt=r[1],
                    started=r[2],
                    ended=r[3],
                    stop_reason=r[4],
                    text=r[5],
                    model=r[6],
                    first_seq=r[7],
                    rewound=bool(r[8]),
                    files_undone=bool(r[12]),
                    checkpoint_before=r[9],
                    checkpoint_after=r[10],
                    not_captured=json.loads(r[11]) if r[11] else [],
                )
                for r in self._db.execute(
                    "SELECT n, prompt, started, ended, stop_reason, text, model, first_seq, "
                    "rewound, checkpoint_before, checkpoint_after, not_captured, files_undone "
                    "FROM turns "
                    "WHERE session_id=? ORDER BY n",
                    (session_id,),
                )
            ]
            by_n = {t.n: t for t in turns}
            for r in self._db.execute(
                "SELECT turn, call_id, name, arguments, status, exit_code, result, decision, "
                "decided_by FROM tool_calls WHERE session_id=? ORDER BY turn, position",
                (session_id,),
            ):
                turn = by_n.get(r[0])
                if turn is not None:
                    turn.calls.append(
                        StoredCall(r[1], r[2], json.loads(r[3]), r[4], r[5], r[6], r[7], r[8])
                    )
            rewound = {t.n for t in turns if t.rewound}
            messages: list[tuple[int, int, Message]] = []
            last_seq = -1
            for seq, turn_n, role, content, name, call_id, status in self._db.execute(
                "SELECT seq, turn, role, content, name, tool_call_id, status FROM messages "
                "WHERE session_id=? ORDER BY seq",
                (session_id,),
            ):
                last_seq = max(last_seq, seq)
                if turn_n not in rewound:
                    messages.append((seq, turn_n, Message(role, content, name, call_id, status)))
        return StoredSession(row, turns, messages, last_seq + 1)
