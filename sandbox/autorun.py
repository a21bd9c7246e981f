"""Auto-run paths: files in a workspace that run, or are read as configuration, with no approval.

This module is the one list of them (:data:`AUTORUN_NAMES`) and the one place that finds them in
a workspace (:class:`AutorunScanner`). Approved code must not change them: at the strong level
the existing ones are mounted read-only over the writable workspace, at every confined level a
change is undone after the call and a newly created one is moved out of the workspace (see
:mod:`sandbox.guard`).

Found in a workspace, at any depth (nested repositories under ``node_modules`` or ``.venv/src``
included; there is no cap on the search):

- every entry named in :data:`AUTORUN_NAMES` (a ``.git`` folder or file, ``.vscode``, ...);
- the folder a ``.git`` file points to (``gitdir: ...``), when it lies in the workspace;
- the folder ``core.hooksPath`` names, from the repository's config, the files that config
  includes and the user's and system's git configs, relative to the repository's working tree;
- the files a repository's config includes, and the programs its keys name (``core.fsmonitor``,
  ``diff.*.textconv``, ``filter.*.smudge``, ...), when they lie in the workspace;
- for each of those that is a symbolic link, where it points, when that lies in the workspace.

The walk runs before and after every command, so directory listings are cached and keyed on the
directory's inode, mtime and ctime: an unchanged tree costs one ``fstatat`` per folder (plus an
``open`` for the folders that have subfolders).
ctime cannot be set by a program (``utime`` moves it to now), so approved code cannot hide a new
entry by restoring a folder's mtime; a folder changed less than :data:`SETTLE_NS` before it was
listed is listed again next time (file system timestamps are coarser than the clock). The walk
opens every folder relative to its parent's descriptor with ``O_NOFOLLOW``: a symbolic link is
never followed, whatever is swapped in while it runs.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from sandbox import gitconfig

logger = logging.getLogger(__name__)

AUTORUN_NAMES: dict[str, str] = {
    ".git": "git runs its hooks and the commands its config names (core.fsmonitor, filters, "
    "pagers) on `git status`, `git commit`, ... and editors run `git status` by themselves",
    ".husky": "husky's git hooks",
    ".pre-commit-config.yaml": "pre-commit runs the hooks it lists on `git commit`",
    ".vscode": "VS Code reads settings and runs tasks (`runOn: folderOpen`) from it",
    ".idea": "JetBrains IDEs run the startup tasks and run configurations kept in it",
    ".envrc": "direnv runs it when a shell enters the folder",
    ".devcontainer": "Dev Containers run the commands it names when the container is built",
    ".gatehouse": "Gatehouse's own configuration for this workspace",
}
"""Names that are protected wherever they appear in a workspace, and what runs or reads them."""

GIT_DATA: frozenset[str] = frozenset({"objects", "refs", "logs", "lfs", "rr-cache", "index"})
"""Inside a git folder: content git reads as data, never as configuration or a program. Left
out of the change check (at the standard level ``git commit`` inside the sandbox still works);
read-only at the strong level all the same."""
GIT_DATA_SUFFIXES: tuple[str, ...] = ("HEAD", ".lock", "EDITMSG")
"""Also data: ``HEAD``, ``ORIG_HEAD``, ``FETCH_HEAD``, lock files, commit messages."""

SETTLE_NS = 2_000_000_000
"""A folder whose mtime or ctime is this close to when it was listed is listed again."""
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def is_git_data(parts: tuple[str, ...]) -> bool:
    """Whether a path inside a git folder (its parts below it) is data (:data:`GIT_DATA`)."""
    return any(p in GIT_DATA or p.endswith(GIT_DATA_SUFFIXES) for p in parts)


@dataclass(frozen=True)
class _Listing:
    key: tuple[int, int, int, int]
    settled: bool
    subdirs: tuple[str, ...]
    protected: tuple[str, ...]


def _inside(path: str, root: str) -> str | None:
    """``path`` (absolute) relative to ``root`` when it lies strictly inside it, else None."""
    path = os.path.normpath(path)
    if path.startswith(root + "/"):
        return path[len(root) + 1 :]
    return None


class AutorunScanner:
    """Finds the auto-run paths of one workspace (thread-safe; listings cached between calls)."""

    def __init__(self, workspace: Path, *, env: dict[str, str] | None = None) -> None:
        self.root = os.path.realpath(workspace)
        self._env = env
        self._cache: dict[str, _Listing] = {}
        self._lock = threading.Lock()
        self.folders = 0
        """Folders visited by the last scan."""

    def find(self) -> dict[str, str]:
        """Every auto-run path (relative, ``/``-separated; existing or not) and why it is one."""
        with self._lock:
            names = self._walk()
        found = {rel: AUTORUN_NAMES[rel.rsplit("/", 1)[-1]] for rel in names}
        global_entries: list[gitconfig.Entry] = []
        for path in gitconfig.global_config_files(self._env):
            global_entries += gitconfig.collect(path)[0]
        for rel in names:
            if rel.rsplit("/", 1)[-1] == ".git":
                self._git_paths(rel, global_entries, found)
        for rel in list(found):
            real = _inside(os.path.realpath(os.path.join(self.root, rel)), self.root)
            if real is not None and real != rel and real not in found:
                found[real] = f"where {rel} points"
        return {  # a path inside another one is covered by it
            rel: why
            for rel, why in found.items()
            if not any(rel.startswith(other + "/") for other in found)
        }

    # --- the walk ---------------------------------------------------------------------------

    def _walk(self) -> list[str]:
        try:
            root_fd = os.open(self.root, _DIR_FLAGS)
        except OSError as exc:
            logger.warning("cannot scan the workspace %s: %s", self.root, exc)
            return []
        found: list[str] = []
        fresh: dict[str, _Listing] = {}
        folders = 0
        stack: list[tuple[str, int, Iterator[str]]] = []
        try:
            listing = self._listing("", root_fd, fresh)
            folders += 1
            found += listing.protected
            stack.append(("", root_fd, iter(listing.subdirs)))
            while stack:
                rel, fd, children = stack[-1]
                name = next(children, None)
                if name is None:
                    os.close(fd)
                    stack.pop()
                    continue
                child_rel = f"{rel}/{name}" if rel else name
                try:  # no descriptor needed for an unchanged folder without subfolders
                    st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                except OSError:
                    continue
                cached = self._cache.get(child_rel)
                key = (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns)
                leaf = cached is not None and cached.settled and not cached.subdirs
                if leaf and cached is not None and cached.key == key:
                    fresh[child_rel] = cached
                    folders += 1
                    found += [f"{child_rel}/{p}" for p in cached.protected]
                    continue
                try:
                    child = os.open(name, _DIR_FLAGS, dir_fd=fd)
                except OSError:  # gone, or swapped for a symbolic link or a file
                    continue
                try:
                    listing = self._listing(child_rel, child, fresh)
                except OSError:
                    os.close(child)
                    continue
                folders += 1
                found += [f"{child_rel}/{p}" for p in listing.protected]
                stack.append((child_rel, child, iter(listing.subdirs)))
        finally:
            for _rel, fd, _it in stack:
                os.close(fd)
        self._cache = fresh
        self.folders = folders
        return found

    def _listing(self, rel: str, fd: int, fresh: dict[str, _Listing]) -> _Listing:
        st = os.fstat(fd)
        key = (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns)
        cached = self._cache.get(rel)
        if cached is None or cached.key != key or not cached.settled:
            listed_at = time.time_ns()
            subdirs: list[str] = []
            protected: list[str] = []
            with os.scandir(fd) as entries:
                for entry in entries:
                    if entry.name in AUTORUN_NAMES:
                        protected.append(entry.name)
                    elif entry.is_dir(follow_symlinks=False):
                        subdirs.append(entry.name)
            settled = listed_at - max(st.st_mtime_ns, st.st_ctime_ns) > SETTLE_NS
            cached = _Listing(key, settled, tuple(subdirs), tuple(protected))
        fresh[rel] = cached
        return cached

    # --- what a repository's config names ---------------------------------------------------

    def _git_paths(
        self, rel: str, global_entries: list[gitconfig.Entry], found: dict[str, str]
    ) -> None:
        dot_git = os.path.join(self.root, rel)
        worktree = os.path.dirname(dot_git)
        gitdir = dot_git
        if os.path.islink(dot_git) or os.path.isfile(dot_git):
            gitdir = self._pointed_gitdir(dot_git, worktree)
            inside = _inside(gitdir, self.root)
            if inside is not None:
                found.setdefault(inside, f"the repository folder {rel} points to")
        configs = [os.path.join(gitdir, "config"), os.path.join(gitdir, "config.worktree")]
        common = gitconfig.read_text(os.path.join(gitdir, "commondir"))
        if common and common.strip():
            common_dir = gitconfig.expand(common.strip(), gitdir)
            configs.append(os.path.join(common_dir, "config"))
            inside = _inside(common_dir, self.root)
            if inside is not None:
                found.setdefault(inside, f"the common repository folder of {rel}")
        entries: list[gitconfig.Entry] = []
        for config in configs:
            more, files = gitconfig.collect(config)
            entries += more
            for file in files:
                inside = _inside(file, self.root)
                if inside is not None:
                    found.setdefault(inside, f"git config of {rel}")
        for value in gitconfig.hooks_paths(global_entries + entries):
            inside = _inside(gitconfig.expand(value, worktree), self.root)
            if inside is not None:
                found.setdefault(inside, f"core.hooksPath of {rel}: git runs the hooks in it")
        for entry in entries:
            program = gitconfig.program_of(entry)
            if program and "/" in program:
                inside = _inside(gitconfig.expand(program, worktree), self.root)
                if inside is not None:
                    found.setdefault(inside, f"{entry.name} of {rel}: git runs it")

    @staticmethod
    def _pointed_gitdir(dot_git: str, worktree: str) -> str:
        """Where a ``.git`` file (``gitdir: PATH``) or symbolic link points."""
        if os.path.islink(dot_git):
            return os.path.normpath(os.path.join(worktree, os.readlink(dot_git)))
        text = gitconfig.read_text(dot_git) or ""
        for line in text.splitlines():
            if line.startswith("gitdir:"):
                return gitconfig.expand(line[len("gitdir:") :].strip(), worktree)
        return dot_git
