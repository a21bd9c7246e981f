"""The vocabulary of file edits, shared by the edit tools, the loop, the approvals and the wire.

Light on purpose (the protocol imports :data:`EditAction` from here): no tool is loaded.

- :class:`FileEdit`: one file an edit call would change, as a person reviews it (a unified diff)
  and as an editor shows it (the full text before and after, for a side-by-side diff).
- :class:`AppliedEdit`: one file a call really changed (``tool_end.edits``).
- :class:`ReadLedger`: per session, the files the model read with ``read_file`` and the digest of
  what it read; the edit tools refuse to change a file that is not in it, or that changed since.
- :class:`EditorDocuments`: what the engine may ask the editor's side (implemented by the server,
  which tracks ``textDocument/didOpen``...): does a file have unsaved changes?
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol

EditAction = Literal["create", "modify", "delete"]
"""What an edit does to one file (the wire's ``edits[].action``)."""


@dataclass(frozen=True)
class FileEdit:
    """One file a proposed edit changes."""

    path: str
    """Relative to the workspace, every symbolic link resolved (``/``-separated)."""
    action: EditAction
    diff: str
    """The full unified diff (git style, ``--- a/path`` / ``+++ b/path``), never shortened."""
    old_text: str | None
    """The file's text now (None for ``create``): what an editor shows on the left."""
    new_text: str | None
    """The proposed text (None for ``delete``): what an editor shows on the right."""
    protected: str | None = None
    """Set when the path is an auto-run path (``sandbox/autorun.py``): what runs or reads it."""


@dataclass(frozen=True)
class AppliedEdit:
    """One file a call changed, as it is now on disk."""

    path: str
    action: EditAction
    diff: str
    """What really changed: the user's version when they edited the proposal."""
    user_edited: bool = False
    """True when the user changed the proposal before accepting it."""


def digest(data: bytes) -> str:
    """The content hash the read ledger keeps (SHA-256, hex)."""
    return hashlib.sha256(data).hexdigest()


class ReadLedger:
    """What the model read in one session: relative path -> digest of the whole file it read.

    ``read_file`` records; the edit tools check when a call is validated and again right before
    the write; a successful edit records what it wrote (the model knows that content, or was told
    the user's version of it). Thread-safe (tools run in worker threads)."""

    def __init__(self) -> None:
        self._seen: dict[str, str] = {}
        self._lock = threading.Lock()

    def record(self, path: str, content_digest: str) -> None:
        with self._lock:
            self._seen[path] = content_digest

    def forget(self, path: str) -> None:
        with self._lock:
            self._seen.pop(path, None)

    def get(self, path: str) -> str | None:
        with self._lock:
            return self._seen.get(path)

    def __len__(self) -> int:
        with self._lock:
            return len(self._seen)


class EditorDocuments(Protocol):
    """The editor's view of the workspace's files (the server tracks open documents)."""

    def has_unsaved_changes(self, path: str, disk_text: Callable[[], str]) -> bool:
        """Whether an editor has the file at ``path`` (absolute, every link resolved) open with
        text that differs from ``disk_text()`` (the file's content on disk, decoded; only
        called when the file is open)."""
        ...

    def written(self, path: str) -> None:
        """The server just wrote ``path``: the editor's copy is behind until it reloads it."""
        ...
