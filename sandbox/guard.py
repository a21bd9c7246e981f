"""The auto-run paths of a workspace, checked around every approved command.

:meth:`WorkspaceGuard.before` finds them (:class:`~sandbox.autorun.AutorunScanner`) and records
what they hold (kind, permission bits, content of every file, link targets); the strong tier
mounts the existing ones read-only. :meth:`WorkspaceGuard.after` looks again once the command is
over and undoes whatever changed, at every confined level:

- an auto-run path that did not exist before (a new ``.git``, ``.vscode``, ``.envrc``, a file
  in a hooks folder, ...) is moved to the quarantine (:mod:`sandbox.quarantine`);
- a changed one is moved to the quarantine too and the original is written back;
- one that disappeared is reported (removing one runs nothing; a deleted repository cannot be
  brought back from what is recorded here).

At the strong level nothing should ever be found (the mounts refuse the writes): the check is
the second line, for a mount lost to a race with another session's command. At the standard
level (Landlock cannot make part of a writable folder read-only) it is the protection.

Recorded content is kept in memory between calls and reused while a file's inode, size, mtime
and ctime are unchanged, so a call costs one ``stat`` per recorded file.
"""

from __future__ import annotations

import hashlib
import logging
import os
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from sandbox.autorun import SETTLE_NS, AutorunScanner, is_git_data
from sandbox.info import ProtectedChange
from sandbox.quarantine import DIR_FLAGS, Quarantine, default_root, open_dir, write_back

logger = logging.getLogger(__name__)

MAX_KEPT_BYTES = 1 << 20
"""Files up to this size are kept so they can be written back; larger ones only by digest."""
MAX_TOTAL_KEPT = 64 << 20
"""At most this much content is kept in memory for one workspace."""

Kind = Literal["dir", "file", "link", "other"]


@dataclass(frozen=True)
class _Node:
    kind: Kind
    mode: int
    digest: bytes
    data: bytes | None
    key: tuple[int, int, int, int, int]
    settled: bool

    def same(self, other: _Node) -> bool:
        return (self.kind, self.mode, self.digest) == (other.kind, other.mode, other.digest)


@dataclass
class Snapshot:
    """The auto-run paths of a workspace at one moment."""

    roots: dict[str, str]
    """Every auto-run path (existing or not) and why it is one."""
    nodes: dict[str, _Node] = field(default_factory=dict)
    """What exists: the roots and, for folders, everything below (git data left out)."""

    def existing_roots(self) -> list[str]:
        """The roots that exist (relative), outermost only."""
        kept: list[str] = []
        for rel in sorted((r for r in self.roots if r in self.nodes), key=lambda r: r.split("/")):
            if not any(rel.startswith(k + "/") for k in kept):
                kept.append(rel)
        return kept


class WorkspaceGuard:
    """Keeps one workspace's auto-run paths as they were before each command."""

    def __init__(self, workspace: Path, quarantine_root: Path | None = None) -> None:
        self.workspace = Path(os.path.realpath(workspace))
        self.scanner = AutorunScanner(self.workspace)
        self.quarantine_root = quarantine_root or default_root(self.workspace)
        self._known: dict[str, _Node] = {}

    # --- recording --------------------------------------------------------------------------

    def before(self) -> Snapshot:
        """Find and record the auto-run paths (before a command)."""
        return self._snapshot()

    def _snapshot(self) -> Snapshot:
        snap = Snapshot(self.scanner.find())
        try:
            ws = os.open(self.workspace, DIR_FLAGS)
        except OSError:
            return snap
        kept = 0
        try:
            for rel in snap.existing_roots() + [r for r in snap.roots if r not in snap.nodes]:
                if rel in snap.nodes or any(rel.startswith(n + "/") for n in snap.nodes):
                    continue
                git = rel.rsplit("/", 1)[-1] == ".git" or "repository folder" in snap.roots[rel]
                kept = self._record(ws, rel, git, snap.nodes, kept)
        finally:
            os.close(ws)
        self._known = dict(snap.nodes)
        return snap

    def _record(self, ws: int, rel: str, git: bool, nodes: dict[str, _Node], kept: int) -> int:
        """Record ``rel`` and (for a folder) everything below it; the bytes kept so far."""
        parts = tuple(rel.split("/"))
        try:
            parent = open_dir(ws, parts[:-1])
        except OSError:
            return kept
        try:
            return self._record_at(
                parent, parts[-1], rel=rel, git=git, inner=(), nodes=nodes, kept=kept
            )
        finally:
            os.close(parent)

    def _record_at(
        self,
        parent: int,
        name: str,
        *,
        rel: str,
        git: bool,
        inner: tuple[str, ...],
        nodes: dict[str, _Node],
        kept: int,
    ) -> int:
        if git and inner and is_git_data(inner):
            return kept
        try:
            info = os.stat(name, dir_fd=parent, follow_symlinks=False)
        except OSError:
            return kept
        node = self._node(parent, name, rel, info, kept)
        if node is None:
            return kept
        nodes[rel] = node
        kept += len(node.data or b"") if node.kind == "file" else 0
        if node.kind == "dir":
            try:
                fd = os.open(name, DIR_FLAGS, dir_fd=parent)
            except OSError:
                return kept
            try:
                for child in sorted(e.name for e in os.scandir(fd)):
                    kept = self._record_at(
                        fd,
                        child,
                        rel=f"{rel}/{child}",
                        git=git,
                        inner=(*inner, child),
                        nodes=nodes,
                        kept=kept,
                    )
            finally:
                os.close(fd)
        return kept

    def _node(
        self, parent: int, name: str, rel: str, info: os.stat_result, kept: int
    ) -> _Node | None:
        key = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
        known = self._known.get(rel)
        if known is not None and known.key == key and known.settled:
            return known
        settled = time.time_ns() - max(info.st_mtime_ns, info.st_ctime_ns) > SETTLE_NS
        mode = stat.S_IMODE(info.st_mode)
        if stat.S_ISDIR(info.st_mode):
            return _Node("dir", mode, b"", None, key, settled)
        if stat.S_ISLNK(info.st_mode):
            target = os.fsencode(os.readlink(name, dir_fd=parent))
            return _Node("link", mode, hashlib.sha256(target).digest(), target, key, settled)
        if not stat.S_ISREG(info.st_mode):
            return _Node("other", mode, str(stat.S_IFMT(info.st_mode)).encode(), None, key, settled)
        try:
            fd = os.open(
                name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=parent
            )
        except OSError:
            return None
        digest = hashlib.sha256()
        data: bytearray | None = bytearray()
        try:
            while chunk := os.read(fd, 1 << 20):
                digest.update(chunk)
                if data is not None:
                    data += chunk
                    if len(data) > MAX_KEPT_BYTES or kept + len(data) > MAX_TOTAL_KEPT:
                        data = None
        finally:
            os.close(fd)
        content = bytes(data) if data is not None else None
        return _Node("file", mode, digest.digest(), content, key, settled)

    # --- checking ---------------------------------------------------------------------------

    def after(self, before: Snapshot) -> list[ProtectedChange]:
        """Undo what a command changed in the auto-run paths recorded by ``before``."""
        now = self._snapshot()
        old, new = before.nodes, now.nodes
        changed = sorted((r for r in old if r in new and not old[r].same(new[r])), key=_depth)
        created = sorted((r for r in new if r not in old), key=_depth)
        deleted = sorted((r for r in old if r not in new), key=_depth)
        if not (changed or created or deleted):
            return []
        quarantine = Quarantine(self.quarantine_root)
        changes: list[ProtectedChange] = []
        moved: list[str] = []
        recreated: set[str] = set()
        try:
            ws = os.open(self.workspace, DIR_FLAGS)
        except OSError as exc:
            return [ProtectedChange(".", "removed", f"the workspace could not be opened: {exc}")]
        try:
            for rel in changed:
                if _under(rel, moved):
                    continue
                was, now_node = old[rel], new[rel]
                if was.kind == now_node.kind == "dir":
                    changes.append(self._put_back(ws, rel, was, "its permissions changed"))
                    continue
                change = self._move_out(ws, quarantine, rel, moved)
                if change.action == "quarantined":
                    restored = self._put_back(ws, rel, was, f"changed; {change.detail}")
                    recreated.add(rel)
                    change = restored
                changes.append(change)
            for rel in created:
                if not _under(rel, moved):
                    changes.append(self._move_out(ws, quarantine, rel, moved))
            roots = set(before.roots)
            for rel in deleted:
                root = _root_of(rel, roots)
                if rel == root:
                    changes.append(ProtectedChange(rel, "removed", "the command removed it"))
                elif root in new or root in recreated:
                    changes.append(self._put_back(ws, rel, old[rel], "the command removed it"))
        finally:
            os.close(ws)
        self._known = {}  # what was just moved or rewritten is read again next time
        for change in changes:
            logger.warning("protected path %s: %s (%s)", change.path, change.action, change.detail)
        return sorted(changes, key=lambda c: c.path)

    def _move_out(
        self, ws: int, quarantine: Quarantine, rel: str, moved: list[str]
    ) -> ProtectedChange:
        try:
            dest = quarantine.move_out(ws, rel)
        except OSError as exc:
            return ProtectedChange(
                rel, "removed", f"could not be moved out of the workspace: {exc}"
            )
        moved.append(rel)
        return ProtectedChange(rel, "quarantined", f"moved to {dest}")

    @staticmethod
    def _put_back(ws: int, rel: str, was: _Node, why: str) -> ProtectedChange:
        if was.kind not in ("dir", "file", "link") or (was.kind != "dir" and was.data is None):
            return ProtectedChange(rel, "quarantined", f"{why}; the original was not kept")
        try:
            write_back(ws, rel, was.kind, was.mode, was.data or b"")
        except OSError as exc:
            return ProtectedChange(rel, "quarantined", f"{why}; could not restore it: {exc}")
        return ProtectedChange(rel, "restored", why)


def describe(changes: list[ProtectedChange] | tuple[ProtectedChange, ...]) -> list[str]:
    """What the model and the user are told: a heading, then one line per change."""
    return [
        "The command created or changed auto-run paths (files that run or configure tools "
        "outside the sandbox without approval: git hooks and config, editor settings and "
        "tasks, ...). Approved code may not do that: what it created or changed was moved to "
        "the quarantine folder (nothing is deleted) and the originals were put back:",
        *(f"  {c.path}: {c.action} ({c.detail})" for c in changes),
    ]


def _depth(rel: str) -> tuple[int, str]:
    return rel.count("/"), rel


def _under(rel: str, tops: list[str]) -> bool:
    return any(rel == top or rel.startswith(top + "/") for top in tops)


def _root_of(rel: str, roots: set[str]) -> str:
    parts = rel.split("/")
    for i in range(1, len(parts) + 1):
        candidate = "/".join(parts[:i])
        if candidate in roots:
            return candidate
    return rel
