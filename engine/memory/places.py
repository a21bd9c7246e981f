"""Where a workspace's memory lives in the data folder.

::

    <data folder>/
      audit/audit.jsonl           the audit log (every workspace), and audit.head
      workspaces/<key>/
        workspace.json            which folder this is (for people and `gatehouse audit`)
        sessions.sqlite3          sessions (WAL)
        checkpoints/              the shadow repository (GIT_DIR) and its private files

``<key>`` is the first 16 hex digits of the SHA-256 of the workspace's real path, so the same
folder reached through a symbolic link shares its memory, and nothing in the key depends on what
the workspace contains. Folders are created 0700.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from engine.datadir import data_dir


def workspace_key(workspace: Path) -> str:
    """The key of a workspace's memory: a hash of its real path."""
    real = os.path.realpath(workspace)
    return hashlib.sha256(real.encode("utf-8", "surrogateescape")).hexdigest()[:16]


def make_private_dir(folder: Path) -> Path:
    """``folder`` (and its parents) created 0700 if missing."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    return folder


@dataclass(frozen=True)
class Places:
    """The files of one workspace's memory (nothing is created until asked)."""

    root: Path
    """The data folder."""
    workspace: Path
    """The workspace's real path."""

    @classmethod
    def for_workspace(cls, workspace: Path, root: Path | None = None) -> Places:
        return cls(root or data_dir(create=False), Path(os.path.realpath(workspace)))

    @property
    def key(self) -> str:
        return workspace_key(self.workspace)

    @property
    def folder(self) -> Path:
        return self.root / "workspaces" / self.key

    @property
    def sessions_db(self) -> Path:
        return self.folder / "sessions.sqlite3"

    @property
    def checkpoints(self) -> Path:
        return self.folder / "checkpoints"

    @property
    def audit_log(self) -> Path:
        return audit_log_path(self.root)

    def prepare(self) -> Path:
        """Create the workspace's folder (0700) and its description; returns the folder."""
        folder = make_private_dir(self.folder)
        about = folder / "workspace.json"
        if not about.exists():
            tmp = folder / f".workspace.json.{os.getpid()}"
            tmp.write_text(json.dumps({"path": str(self.workspace)}) + "\n", encoding="utf-8")
            os.replace(tmp, about)
        return folder


def audit_log_path(root: Path | None = None) -> Path:
    """The audit log of every workspace."""
    return (root or data_dir(create=False)) / "audit" / "audit.jsonl"


def known_workspaces(root: Path | None = None) -> dict[str, str]:
    """Every workspace with memory in the data folder: key -> its path."""
    base = (root or data_dir(create=False)) / "workspaces"
    found: dict[str, str] = {}
    try:
        entries = list(base.iterdir())
    except OSError:
        return found
    for entry in entries:
        try:
            about = json.loads((entry / "workspace.json").read_text(encoding="utf-8"))
            found[entry.name] = str(about["path"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return found
