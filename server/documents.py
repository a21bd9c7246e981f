"""The files the editor has open, as LSP text synchronisation reports them, for the edit tools.

The server advertises incremental text synchronisation, like any language server: an editor
sends ``textDocument/didOpen`` (the text), ``didChange`` (each edit), ``didSave`` and
``didClose``, and pygls keeps each open document's text. :class:`OpenDocuments` answers the one
question the engine asks (:class:`engine.edits.EditorDocuments`): does the editor show a file
with text that differs from the file on disk, i.e. with unsaved changes? An edit of such a file
is refused rather than written under the user's feet.

The comparison is with the disk, not with a "dirty" flag: the protocol has no such flag, an
editor re-sends a file it reloaded as a change, and a buffer restored from a backup is opened
with text that was never saved. Right after the server writes a file, the editor still shows the
old text until it reloads it; that document is "behind" (not unsaved) until its next
notification.

Notifications arrive on the event loop; the engine asks from a worker thread: the bookkeeping is
under a lock, and a document's text is an immutable string.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from urllib.parse import unquote

from pygls.uris import to_fs_path

logger = logging.getLogger(__name__)

TextOf = Callable[[str], str | None]
"""A document's current text by its (unquoted) URI, or None when it is not open."""


def _same(a: str, b: str) -> bool:
    return a == b or a.replace("\r\n", "\n") == b.replace("\r\n", "\n")


class OpenDocuments:
    """The workspace files an editor has open (implements ``EditorDocuments``)."""

    def __init__(self, text_of: TextOf | None = None) -> None:
        self._text_of: TextOf = text_of or (lambda _uri: None)
        self._lock = threading.Lock()
        self._paths: dict[str, str] = {}
        """Open documents that are files: unquoted URI -> absolute path as the editor names it."""
        self._behind: set[str] = set()
        """Documents whose file the server wrote since the editor last sent their text."""

    def bind(self, text_of: TextOf) -> None:
        """Where the documents' text is kept (pygls' workspace)."""
        self._text_of = text_of

    # --- notifications (event loop) ----------------------------------------------------------

    def opened(self, uri: str) -> None:
        key = unquote(uri)
        path = to_fs_path(uri) if uri.startswith("file:") else None
        with self._lock:
            self._behind.discard(key)
            if path:
                self._paths[key] = os.path.abspath(path)

    def changed(self, uri: str) -> None:
        with self._lock:
            self._behind.discard(unquote(uri))

    def closed(self, uri: str) -> None:
        key = unquote(uri)
        with self._lock:
            self._paths.pop(key, None)
            self._behind.discard(key)

    # --- EditorDocuments (worker threads) ----------------------------------------------------

    def _documents_of(self, path: str) -> list[str]:
        with self._lock:
            named = list(self._paths.items())
        if not named:
            return []
        found = []
        for key, named_path in named:
            if named_path == path or os.path.realpath(named_path) == path:
                found.append(key)
        return found

    def has_unsaved_changes(self, path: str, disk_text: Callable[[], str]) -> bool:
        for key in self._documents_of(path):
            with self._lock:
                if key in self._behind:
                    continue
            text = self._text_of(key)
            if text is not None and not _same(text, disk_text()):
                logger.info("%s has unsaved changes in the editor", path)
                return True
        return False

    def written(self, path: str) -> None:
        keys = self._documents_of(path)
        with self._lock:
            self._behind.update(k for k in keys if k in self._paths)

    def __len__(self) -> int:
        with self._lock:
            return len(self._paths)
