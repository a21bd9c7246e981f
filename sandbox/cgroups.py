"""Per-command cgroups: a process-count limit that holds for root too, and a kill that catches
everything a command started (setsid and double-fork daemons included).

Used where the server may create cgroups (root, or a delegated subtree). Works with a pure
cgroup v2 hierarchy (``pids`` controller + ``cgroup.kill``) and with the hybrid layout (v1
``pids`` for the limit, the v2 ``unified`` mount for ``cgroup.kill``).
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger(__name__)

_ROOT = Path("/sys/fs/cgroup")
_counter = itertools.count(1)


@dataclass(frozen=True)
class _Tree:
    """A directory under which this server may create one group per command."""

    base: Path
    pids: bool
    kill: bool


def pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists (one of another user's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _reap_stale(hierarchy: Path) -> None:
    """Remove the empty groups of servers that died without cleaning up (SIGKILL, a crash)."""
    for parent in hierarchy.glob("gatehouse-*"):
        pid = parent.name.removeprefix("gatehouse-")
        if not pid.isdigit() or pid_alive(int(pid)):
            continue
        for child in parent.glob("call-*"):
            with contextlib.suppress(OSError):
                child.rmdir()
        with contextlib.suppress(OSError):
            parent.rmdir()


def _try_parent(hierarchy: Path, *, v2: bool) -> Path | None:
    _reap_stale(hierarchy)
    parent = hierarchy / f"gatehouse-{os.getpid()}"
    try:
        parent.mkdir(exist_ok=True)
        if v2 and (hierarchy / "cgroup.controllers").exists():
            controllers = (hierarchy / "cgroup.controllers").read_text().split()
            if "pids" in controllers:
                with contextlib.suppress(OSError):
                    (hierarchy / "cgroup.subtree_control").write_text("+pids")
                with contextlib.suppress(OSError):
                    (parent / "cgroup.subtree_control").write_text("+pids")
        return parent
    except OSError:
        return None


def discover() -> list[_Tree]:
    """The hierarchies this process can use; empty when cgroups are not writable."""
    trees: list[_Tree] = []
    if (_ROOT / "cgroup.controllers").exists():  # pure v2
        parent = _try_parent(_ROOT, v2=True)
        if parent is not None:
            pids = "pids" in (parent / "cgroup.subtree_control").read_text()
            trees.append(_Tree(parent, pids=pids, kill=(_ROOT / "cgroup.procs").exists()))
        return trees
    unified = _ROOT / "unified"
    if (unified / "cgroup.controllers").exists():
        parent = _try_parent(unified, v2=True)
        if parent is not None:
            trees.append(_Tree(parent, pids=False, kill=True))
    v1_pids = _ROOT / "pids"
    if (v1_pids / "cgroup.procs").exists():
        parent = _try_parent(v1_pids, v2=False)
        if parent is not None:
            trees.append(_Tree(parent, pids=True, kill=False))
    return trees


class CommandGroup:
    """The cgroups of one command: created before it runs, killed and removed after."""

    def __init__(self, trees: list[_Tree], max_processes: int | None) -> None:
        """``max_processes`` None: no limit (the group is only for the kill)."""
        self._dirs: list[tuple[_Tree, Path]] = []
        self._limited = max_processes is not None
        name = f"call-{next(_counter)}"
        for tree in trees:
            path = tree.base / name
            try:
                path.mkdir()
                if tree.pids and max_processes is not None:
                    (path / "pids.max").write_text(str(max_processes))
            except OSError as exc:
                logger.warning("cannot create cgroup %s: %s", path, exc)
                continue
            self._dirs.append((tree, path))

    @property
    def limits_processes(self) -> bool:
        return self._limited and any(tree.pids for tree, _ in self._dirs)

    def add(self, pid: int) -> bool:
        """Move ``pid`` in (before it starts anything). False when any hierarchy refused it."""
        ok = True
        for _, path in self._dirs:
            try:
                (path / "cgroup.procs").write_text(str(pid))
            except OSError as exc:
                logger.warning("cannot move %d into %s: %s", pid, path, exc)
                ok = False
        return ok

    def pids(self) -> set[int]:
        found: set[int] = set()
        for _, path in self._dirs:
            with contextlib.suppress(OSError, ValueError):
                found.update(int(p) for p in (path / "cgroup.procs").read_text().split())
        return found

    def kill(self) -> None:
        """Kill every process in the group. Blocking (a few ms): call it off the event loop."""
        for tree, path in self._dirs:
            if tree.kill:
                with contextlib.suppress(OSError):
                    (path / "cgroup.kill").write_text("1")
        for _ in range(50):  # v1 has no cgroup.kill: repeat until no process is left
            left = self.pids()
            if not left:
                return
            for pid in left:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.01)
        logger.warning("processes left in cgroups after kill: %s", sorted(self.pids()))

    def remove(self) -> None:
        """Kill what is left and remove the groups. Blocking: call it off the event loop."""
        self.kill()
        for _, path in self._dirs:
            for _ in range(100):
                try:
                    path.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.01)  # the last processes are still exiting
            else:
                logger.warning("could not remove cgroup %s", path)


def remove_trees(trees: list[_Tree]) -> None:
    """At exit: remove this server's parent groups (empty by then)."""
    for tree in trees:
        with contextlib.suppress(OSError):
            tree.base.rmdir()
