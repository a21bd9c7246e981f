"""Sessions on disk: what comes back after a restart, who may open a session, and rewinding."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from engine.backends.base import Message
from engine.memory.store import SessionDB, StoredCall, StoreError, process_identity


def saved_session(db: SessionDB, owner: str) -> None:
    for n, (prompt, answer) in enumerate([("first question", "one"), ("second", "two")], 1):
        seq = (n - 1) * 2
        db.begin_turn("s_1", n, prompt, model="m", settings={}, first_seq=seq, owner=owner)
        db.add_message("s_1", seq, n, Message("user", prompt))
        db.add_message("s_1", seq + 1, n, Message("assistant", answer))
        db.end_turn("s_1", n, "end_turn", answer)


def test_a_session_comes_back_with_its_messages_calls_and_title(tmp_path: Path) -> None:
    db = SessionDB(tmp_path / "s.sqlite3")
    saved_session(db, process_identity())
    call = StoredCall(
        "c1", "terminal", {"command": "ls"}, "completed", 0, "a\n", "allow", "toolConfirm"
    )
    db.record_call("s_1", 2, 0, call)
    db.close()
    again = SessionDB(tmp_path / "s.sqlite3")
    (row,) = again.sessions()
    assert (row.title, row.turns) == ("first question", 2)
    stored = again.load("s_1")
    assert stored is not None
    assert [m.content for _s, _t, m in stored.messages] == [
        "first question",
        "one",
        "second",
        "two",
    ]
    assert stored.turns[1].calls == [call]
    assert stored.next_seq == 4


def test_rewinding_the_conversation_drops_later_turns_from_it_but_keeps_them_listed(
    tmp_path: Path,
) -> None:
    db = SessionDB(tmp_path / "s.sqlite3")
    saved_session(db, process_identity())
    db.rewind_conversation("s_1", 2)
    stored = db.load("s_1")
    assert stored is not None
    assert [m.content for _s, _t, m in stored.messages] == ["first question", "one"]
    assert [t.rewound for t in stored.turns] == [False, True]
    assert stored.next_seq == 4  # numbers are never reused


def test_a_session_open_in_a_live_server_is_refused_and_a_dead_ones_is_taken_over(
    tmp_path: Path,
) -> None:
    db = SessionDB(tmp_path / "s.sqlite3")
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        live = process_identity(other.pid)
        saved_session(db, live)
        assert db.claim("s_1", process_identity()) == live
    finally:
        other.kill()
        other.wait()
    assert db.claim("s_1", process_identity()) is None  # its owner is gone


def test_a_database_from_a_newer_gatehouse_is_refused_not_damaged(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    SessionDB(path).close()
    with sqlite3.connect(path) as raw:
        raw.execute("UPDATE meta SET value='99' WHERE key='schema'")
    with pytest.raises(StoreError, match="newer Gatehouse"):
        SessionDB(path)
