"""The sessions database's schema, and the transaction every read and write runs in."""

from __future__ import annotations

import contextlib
import sqlite3
from typing import Any

SCHEMA_VERSION = 1

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    title TEXT NOT NULL,
    created REAL NOT NULL,
    updated REAL NOT NULL,
    turns INTEGER NOT NULL DEFAULT 0,
    model TEXT,
    owner TEXT
);
CREATE TABLE IF NOT EXISTS turns (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    n INTEGER NOT NULL,
    prompt TEXT NOT NULL,
    started REAL NOT NULL,
    ended REAL,
    stop_reason TEXT,
    text TEXT,
    model TEXT,
    settings TEXT,
    first_seq INTEGER NOT NULL,
    rewound INTEGER NOT NULL DEFAULT 0,
    files_undone INTEGER NOT NULL DEFAULT 0,
    checkpoint_before TEXT,
    checkpoint_after TEXT,
    not_captured TEXT,
    PRIMARY KEY (session_id, n)
);
CREATE TABLE IF NOT EXISTS messages (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    turn INTEGER NOT NULL,
    role TEXT NOT NULL,
    content TEXT NOT NULL,
    name TEXT,
    tool_call_id TEXT,
    status TEXT,
    PRIMARY KEY (session_id, seq)
);
CREATE TABLE IF NOT EXISTS tool_calls (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    turn INTEGER NOT NULL,
    call_id TEXT NOT NULL,
    position INTEGER NOT NULL,
    name TEXT NOT NULL,
    arguments TEXT NOT NULL,
    status TEXT,
    exit_code INTEGER,
    result TEXT,
    decision TEXT,
    decided_by TEXT,
    PRIMARY KEY (session_id, call_id)
);
CREATE TABLE IF NOT EXISTS grants (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    turn INTEGER NOT NULL,
    tool TEXT NOT NULL,
    granted REAL NOT NULL,
    PRIMARY KEY (session_id, tool)
);
CREATE INDEX IF NOT EXISTS sessions_by_activity ON sessions(updated);
"""


class StoreError(Exception):
    """The sessions database cannot be used (unwritable, full disk, newer schema...)."""


class Transaction:
    """``BEGIN [IMMEDIATE]`` ... ``COMMIT`` (``ROLLBACK`` on error); errors become
    :class:`StoreError`."""

    def __init__(self, db: sqlite3.Connection, begin: str) -> None:
        self._db = db
        self._begin = begin
        self._outer = False

    def __enter__(self) -> Transaction:
        self._outer = not self._db.in_transaction
        if self._outer:
            try:
                self._db.execute(self._begin)
            except sqlite3.Error as exc:
                raise StoreError(f"the sessions database is not available: {exc}") from exc
        return self

    def __exit__(self, kind: Any, exc: BaseException | None, tb: Any) -> None:
        if not self._outer:
            return
        if exc is None:
            try:
                self._db.execute("COMMIT")
                return
            except sqlite3.Error as commit_error:
                exc = commit_error
        with contextlib.suppress(sqlite3.Error):
            self._db.execute("ROLLBACK")
        if isinstance(exc, sqlite3.Error):
            raise StoreError(f"the sessions database could not be written: {exc}") from exc
