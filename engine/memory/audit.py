"""The audit log: one JSON record per line, each carrying the SHA-256 of the line before it.

Every approval request and its outcome (who decided), every execution (before it runs, and how it
ended) and every rewind is appended here. A record is written with one ``write`` and fsynced
before :meth:`AuditLog.append` returns, so the call it describes never runs before its record is
on disk; when the record cannot be written the caller refuses to run code (fail closed).

Format (UTF-8, one object per line, ``\\n``-terminated)::

    {"seq": 0, "prev": "000…0", "time": "2026-12-01T10:00:00.123Z", "type": "approval", ...}

``seq`` counts records from 0; ``prev`` is the SHA-256 (hex) of the previous line's bytes
(without its newline; 64 zeros for the first). ``audit.head`` beside the log holds the
``seq`` and hash of the last record written, so removing records from the end is seen too.
Several servers append to the same log: each append holds an exclusive ``flock`` on it.

A server killed in the middle of a ``write`` may leave an unterminated last line; the next
append cuts it off (nothing it described ran: the call waits for the fsync) and says so in a
``log_repaired`` record. Secrets never reach the log: every string goes through
:func:`sandbox.environment.mask_secrets`.

What the chain proves, and what it cannot (someone who can write the data folder can rewrite
the whole chain), is in ``docs/memory.md``.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Literal

from engine.approvals import Decider
from sandbox.environment import mask_secrets

__all__ = ["GENESIS", "AuditLog", "AuditUnavailable", "Decider", "call_digest", "verify"]

logger = logging.getLogger(__name__)

GENESIS = "0" * 64
"""``prev`` of the first record."""
_TAIL_CHUNK = 64 * 1024

UNHASHED = frozenset({"sha256", "prev"})
"""Fields never masked (hashes)."""


class AuditUnavailable(Exception):
    """The audit log cannot be written (full disk, unwritable data folder, ...)."""


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def call_digest(tool: str, arguments: Mapping[str, Any], cwd: str) -> str:
    """SHA-256 (hex) of a call's tool, canonical arguments and working folder: what an approval
    is bound to (the arguments are hashed in full, before any masking)."""
    payload = canonical_json({"tool": tool, "arguments": dict(arguments), "cwd": cwd})
    return hashlib.sha256(payload.encode("utf-8", "surrogatepass")).hexdigest()


def masked(value: Any, key: str = "") -> Any:
    """``value`` with every string masked (:func:`mask_secrets`), hashes left as they are."""
    if isinstance(value, str):
        return value if key in UNHASHED else mask_secrets(value)
    if isinstance(value, Mapping):
        return {str(k): masked(v, str(k)) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [masked(v, key) for v in value]
    return value


def line_hash(line: bytes) -> str:
    return hashlib.sha256(line).hexdigest()


def _now() -> str:
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t % 1 * 1000):03d}Z"


@dataclass
class _Tail:
    size: int
    seq: int
    hash: str


class AuditLog:
    """Appends records to one log file (blocking: call it from a worker thread)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.head_path = path.with_name(path.name.replace(".jsonl", "") + ".head")
        self._fd = -1
        self._tail: _Tail | None = None

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def _open(self) -> int:
        if self._fd < 0:
            try:
                self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW
                self._fd = os.open(self.path, flags, 0o600)
            except OSError as exc:
                raise AuditUnavailable(f"cannot open the audit log {self.path}: {exc}") from exc
        return self._fd

    def append(self, record: Mapping[str, Any]) -> str:
        """Write ``record`` (masked) as the next line, fsync it; its hash. Raises
        :class:`AuditUnavailable` when it is not on disk."""
        fd = self._open()
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError as exc:
            raise AuditUnavailable(f"cannot lock the audit log: {exc}") from exc
        try:
            try:
                tail = self._current_tail(fd)
            except OSError as exc:
                self._tail = None
                raise AuditUnavailable(f"cannot read the end of the audit log: {exc}") from exc
            body = {"seq": tail.seq + 1, "prev": tail.hash, "time": _now(), **masked(record)}
            line = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode(
                "utf-8", "surrogatepass"
            )
            data = line + b"\n"
            try:
                written = 0
                while written < len(data):
                    written += os.write(fd, data[written:])
                os.fsync(fd)
            except OSError as exc:
                self._cut(fd, tail.size)  # never leave half a record behind
                raise AuditUnavailable(f"cannot write the audit log: {exc}") from exc
            digest = line_hash(line)
            self._tail = _Tail(tail.size + len(data), tail.seq + 1, digest)
            self._write_head(tail.seq + 1, digest)
            return digest
        finally:
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_UN)

    def _cut(self, fd: int, size: int) -> None:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, size)
        self._tail = None

    def _write_head(self, seq: int, digest: str) -> None:
        tmp = self.head_path.with_name(f".{self.head_path.name}.{os.getpid()}")
        try:
            tmp.write_text(json.dumps({"seq": seq, "hash": digest}) + "\n", encoding="utf-8")
            os.replace(tmp, self.head_path)
        except OSError as exc:  # the log itself is written: the head only helps `verify`
            logger.warning("could not update %s: %s", self.head_path, exc)

    def _current_tail(self, fd: int) -> _Tail:
        """The last complete record (seq, hash) and the size that ends it, cutting off a torn
        last line (a server killed mid-write) with a ``log_repaired`` record."""
        size = os.fstat(fd).st_size
        if self._tail is not None and self._tail.size == size:
            return self._tail
        if size == 0:
            return _Tail(0, -1, GENESIS)
        end, last = _last_line(self.path, size)
        tail = _Tail(size, -1, GENESIS)
        if last is not None:
            try:
                seq = int(json.loads(last)["seq"])
            except (ValueError, KeyError, TypeError):
                seq = -1  # unreadable: `verify` reports it; the chain continues from its hash
            tail = _Tail(end, seq, line_hash(last))
        if end != size:
            dropped = size - end
            logger.warning("the audit log ended with %d bytes of an unfinished record", dropped)
            self._cut(fd, end)
            repair = {
                "seq": tail.seq + 1,
                "prev": tail.hash,
                "time": _now(),
                "type": "log_repaired",
                "droppedBytes": dropped,
                "detail": "an unfinished record (a server stopped while writing it) was cut off; "
                "the call it described did not run",
            }
            line = json.dumps(repair, separators=(",", ":")).encode()
            os.write(fd, line + b"\n")
            os.fsync(fd)
            tail = _Tail(end + len(line) + 1, tail.seq + 1, line_hash(line))
        self._tail = tail
        return tail


def _last_line(path: Path, size: int) -> tuple[int, bytes | None]:
    """(where the last complete line ends, that line without its newline) of a file of
    ``size`` bytes."""
    with open(path, "rb") as fh:
        end = size
        fh.seek(size - 1)
        if fh.read(1) != b"\n":  # a torn last line: find the newline before it
            end = _previous_newline(fh, size - 1)
            if end < 0:
                return 0, None
            end += 1
        start = _previous_newline(fh, end - 1) + 1
        fh.seek(start)
        return end, fh.read(end - 1 - start)


def _previous_newline(fh: BinaryIO, before: int) -> int:
    """Offset of the last ``\\n`` strictly before ``before``; -1 when there is none."""
    pos = before
    while pos > 0:
        start = max(0, pos - _TAIL_CHUNK)
        fh.seek(start)
        chunk = fh.read(pos - start)
        found = chunk.rfind(b"\n")
        if found >= 0:
            return start + found
        pos = start
    return -1


# --- reading and verifying ------------------------------------------------------------------


@dataclass(frozen=True)
class Problem:
    line: int
    """1-based line of the log."""
    kind: Literal["edited", "removed", "reordered", "unreadable", "torn"]
    detail: str

    @property
    def fatal(self) -> bool:
        return self.kind != "torn"


@dataclass
class Verification:
    records: int = 0
    problems: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not any(p.fatal for p in self.problems)


def read_lines(path: Path) -> Iterator[tuple[int, bytes, bool]]:
    """(1-based line number, bytes without newline, terminated) of every line."""
    with open(path, "rb") as fh:
        for number, raw in enumerate(fh, start=1):
            terminated = raw.endswith(b"\n")
            yield number, raw[:-1] if terminated else raw, terminated


def records(path: Path) -> Iterator[dict[str, Any]]:
    """Every readable record (unreadable lines are skipped: `verify` reports them)."""
    try:
        lines = list(read_lines(path))
    except FileNotFoundError:
        return
    for _number, line, _terminated in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            yield record


def verify(path: Path) -> Verification:
    """Check the chain of one log: which record was edited, removed or reordered."""
    result = Verification()
    try:
        lines = list(read_lines(path))
    except FileNotFoundError:
        return result
    hashes = {line_hash(line): number for number, line, _terminated in lines}
    previous: tuple[int, int, str] | None = None  # (line, seq, hash) of the previous record
    for number, line, terminated in lines:
        digest = line_hash(line)
        try:
            record = json.loads(line)
            seq, prev = int(record["seq"]), str(record["prev"])
        except (ValueError, KeyError, TypeError):
            if not terminated and number == len(lines):
                result.problems.append(
                    Problem(
                        number,
                        "torn",
                        "an unfinished last record (a server stopped while "
                        "writing it; the next append cuts it off); the call did not run",
                    )
                )
                break
            result.problems.append(Problem(number, "unreadable", "not a JSON record: edited"))
            previous = (number, previous[1] + 1 if previous else 0, digest)
            continue
        result.records += 1
        expected_seq = previous[1] + 1 if previous else 0
        expected_prev = previous[2] if previous else GENESIS
        if prev != expected_prev:
            result.problems.append(
                _diagnose(
                    number,
                    seq=seq,
                    prev=prev,
                    expected_seq=expected_seq,
                    previous=previous,
                    hashes=hashes,
                )
            )
        elif seq != expected_seq:
            result.problems.append(
                Problem(number, "edited", f"record {seq} says seq {seq}, expected {expected_seq}")
            )
        previous = (number, seq, digest)
    head = _read_head(path)
    if head is not None and previous is not None:
        head_seq, head_hash = head
        if head_seq > previous[1]:
            result.problems.append(
                Problem(
                    previous[0],
                    "removed",
                    f"records {previous[1] + 1}-{head_seq} were removed from the end "
                    f"(audit.head says the last one written was {head_seq})",
                )
            )
        elif head_seq == previous[1] and head_hash != previous[2]:
            result.problems.append(
                Problem(previous[0], "edited", f"record {head_seq} (the last) was edited")
            )
    elif head is not None and head[0] >= 0 and previous is None:
        result.problems.append(Problem(1, "removed", "every record was removed"))
    return result


def _diagnose(
    number: int,
    *,
    seq: int,
    prev: str,
    expected_seq: int,
    previous: tuple[int, int, str] | None,
    hashes: dict[str, int],
) -> Problem:
    if prev in hashes and hashes[prev] != number - 1:
        return Problem(
            number,
            "reordered",
            f"record {seq} follows line {hashes[prev]} in the chain, not line {number - 1}: "
            "records were reordered",
        )
    if seq > expected_seq:
        missing = f"{expected_seq}" if seq == expected_seq + 1 else f"{expected_seq}-{seq - 1}"
        return Problem(number, "removed", f"record(s) {missing} before line {number} were removed")
    if seq < expected_seq:
        return Problem(number, "reordered", f"record {seq} appears after record {seq - 1}+")
    if previous is None:
        return Problem(number, "edited", f"record {seq} (the first) does not start the chain")
    return Problem(
        previous[0],
        "edited",
        f"the record at line {previous[0]} (seq {previous[1]}) was edited: the record after it "
        "recorded another hash for it",
    )


def _read_head(path: Path) -> tuple[int, str] | None:
    head = path.with_name(path.name.replace(".jsonl", "") + ".head")
    try:
        data = json.loads(head.read_text(encoding="utf-8"))
        return int(data["seq"]), str(data["hash"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
