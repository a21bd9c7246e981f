"""The shadow repository: git plumbing over a hostile workspace, with nothing of the user's git.

A checkpoint is a commit in a repository of Gatehouse's own, in the data folder, whose work tree
is the workspace. The workspace is treated as hostile (approved code wrote it), so git runs:

- found outside the workspace (:func:`sandbox.runtime.find_program`, then checked like every
  program the server runs: :func:`sandbox.runtime.verify_program`), with an environment built
  from scratch: ``GIT_DIR``, ``GIT_WORK_TREE`` and ``GIT_INDEX_FILE`` point into the data folder,
  ``GIT_CONFIG_NOSYSTEM=1``, ``GIT_CONFIG_GLOBAL=/dev/null``, ``HOME`` and ``XDG_CONFIG_HOME``
  a private empty folder: no system, user or workspace configuration is read, and the user's
  ``.git`` is neither used nor touched (git never adds a ``.git`` entry);
- with hooks off (``core.hooksPath=/dev/null``), no fsmonitor, no untracked cache, no
  submodule recursion, no line-ending or encoding conversion, and ``info/attributes`` unsetting
  ``text``, ``eol``, ``ident``, ``filter`` and ``working-tree-encoding`` for every path, so a
  ``.gitattributes`` in the workspace cannot choose a filter, a driver or a conversion (git
  only runs filters and drivers its configuration names, and no configuration names any);
- from the data folder as working directory, with a timeout, and only plumbing (``ls-files``,
  ``update-index``, ``write-tree``, ``commit-tree``, ``update-ref``, ``ls-tree``,
  ``diff-tree``, ``cat-file``): nothing that checks files out or runs anything.

What is captured follows the workspace's ``.gitignore`` files; a file over the size limit and a
folder that is a git repository of its own are not captured, and each checkpoint says so (in
its commit message, read back by :meth:`ShadowRepo.uncaptured`). Several servers may share a
workspace: every operation holds an exclusive ``flock`` on the repository.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import stat
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from engine.memory.git import ATTRIBUTES, CONFIG, Git, ShadowError, find_git

__all__ = ["EMPTY_TREE", "Entry", "ShadowError", "ShadowRepo", "Snapshot", "blob_id", "find_git"]

logger = logging.getLogger(__name__)

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

Entry = tuple[str, str]
"""(mode, object id) of a path in a tree: ``100644``/``100755`` files, ``120000`` links."""


@dataclass(frozen=True)
class Snapshot:
    """One checkpoint of the workspace."""

    commit: str
    tree: str
    too_large: tuple[str, ...] = ()
    """Files over the size limit, not captured (relative paths)."""
    own_repositories: tuple[str, ...] = ()
    """Folders that are git repositories of their own, not captured (``sub/``)."""
    ignored: tuple[str, ...] = ()
    """What the workspace's ``.gitignore`` files exclude (folders collapsed: ``node_modules/``)."""
    seconds: float = 0.0

    def not_captured(self, max_file_bytes: int) -> list[str]:
        """One line per path that is not in the checkpoint, for a person."""
        limit = _size(max_file_bytes)
        return (
            [f"{p} (over the {limit} size limit)" for p in self.too_large]
            + [f"{p} (a git repository of its own)" for p in self.own_repositories]
            + [f"{p} (.gitignore)" for p in self.ignored]
        )


@dataclass
class _Cache:
    tree_commits: dict[str, str] = field(default_factory=dict)


def _size(n: int) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:g} {unit}" if unit != "bytes" else f"{n} bytes"
        n = n / 1024  # type: ignore[assignment]
    return f"{n} bytes"


class ShadowRepo:
    """The checkpoints of one workspace (blocking methods: call them from a worker thread)."""

    def __init__(
        self, folder: Path, workspace: Path, *, max_file_bytes: int, git: str | None = None
    ) -> None:
        self.folder = folder
        self.workspace = Path(os.path.realpath(workspace))
        self.max_file_bytes = max_file_bytes
        self.git_dir = folder / "repo"
        self.index = folder / "index"
        self.home = folder / "home"
        self._runner = Git(
            folder=folder,
            git_dir=self.git_dir,
            index=self.index,
            home=self.home,
            workspace=self.workspace,
            binary=git,
        )
        self.git = self._runner.run
        self._start = self._runner.start
        self._finish = self._runner.finish
        self._cache = _Cache()

    def _write_ref(self, ref: str, commit: str) -> None:
        """A loose ref of our own repository (what ``update-ref`` would write)."""
        parts = ref.split("/")
        if parts[:2] != ["refs", "gatehouse"] or any(p in ("", ".", "..") for p in parts):
            raise ShadowError(f"not a checkpoint ref: {ref!r}")
        path = self.git_dir.joinpath(*parts)
        try:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.{os.getpid()}")
            tmp.write_text(commit + "\n", encoding="ascii")
            os.replace(tmp, path)
        except OSError as exc:
            raise ShadowError(f"cannot write the checkpoint ref {ref}: {exc}") from exc

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        try:
            self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(self.folder / "lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise ShadowError(f"cannot use {self.folder}: {exc}") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            self._prepare()
            stale = self.folder / "index.lock"  # a git killed with its server: nobody holds it
            with contextlib.suppress(FileNotFoundError):
                stale.unlink()
                logger.info("removed a stale %s", stale)
            yield
        finally:
            os.close(fd)

    def _prepare(self) -> None:
        if (self.git_dir / "gatehouse-ready").exists():
            return
        try:
            self.home.mkdir(mode=0o700, exist_ok=True)
            self.git_dir.mkdir(mode=0o700, exist_ok=True)
            self.git("init", "--quiet", "--bare", str(self.git_dir), work_tree=False)
            for key, value in CONFIG:
                self.git(
                    "config", "--file", str(self.git_dir / "config"), key, value, work_tree=False
                )
            info = self.git_dir / "info"
            info.mkdir(mode=0o700, exist_ok=True)
            (info / "attributes").write_text(ATTRIBUTES, encoding="ascii")
            (info / "exclude").write_text("", encoding="ascii")
            for sample in (self.git_dir / "hooks").glob("*"):
                sample.unlink()
            (self.git_dir / "gatehouse-ready").write_text("1\n", encoding="ascii")
        except OSError as exc:
            raise ShadowError(f"cannot create the checkpoints in {self.git_dir}: {exc}") from exc

    # --- checkpoints ------------------------------------------------------------------------

    def snapshot(self, label: str, ref: str | None = None, *, ignored: bool = True) -> Snapshot:
        """Record the workspace as it is now; ``ref`` (``refs/gatehouse/...``) keeps it."""
        started = time.perf_counter()
        with self._locked():
            # what .gitignore excludes is listed beside the rest (it only reads the workspace)
            listing = (
                self._start(
                    "ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory"
                )
                if ignored
                else None
            )
            try:
                listed = _split(
                    self.git(
                        "ls-files", "-z", "--others", "--modified", "--deleted",
                        "--exclude-standard",
                    )
                )  # fmt: skip
            except BaseException:
                if listing is not None:
                    listing.kill()
                    listing.communicate()
                raise
            update, remove, too_large, own = self._classify(dict.fromkeys(listed))
            if remove:
                self.git("update-index", "--force-remove", "-z", "--stdin", stdin=_join(remove))
            if update:
                self.git(
                    "update-index",
                    "--add",
                    "--remove",
                    "--replace",
                    "-z",
                    "--stdin",
                    stdin=_join(update),
                )
            tree = self.git("write-tree").decode().strip()
            excluded = [] if listing is None else _split(self._finish(listing))
            snap = Snapshot("", tree, tuple(sorted(too_large)), tuple(sorted(own)), tuple(excluded))
            commit = self._cache.tree_commits.get(_cache_key(snap))
            if commit is None:
                message = f"Gatehouse checkpoint: {label}\n\n" + json.dumps(
                    {"tooLarge": snap.too_large, "ownRepositories": snap.own_repositories}
                )
                commit = self.git("commit-tree", tree, "-m", message).decode().strip()
                self._cache.tree_commits[_cache_key(snap)] = commit
            if ref is not None:
                self._write_ref(ref, commit)
        return Snapshot(
            commit,
            tree,
            snap.too_large,
            snap.own_repositories,
            snap.ignored,
            time.perf_counter() - started,
        )

    def _classify(self, paths: Iterable[str]) -> tuple[list[str], list[str], list[str], list[str]]:
        """(paths to update, to remove from the index, too large, own repositories)."""
        update: list[str] = []
        remove: list[str] = []
        too_large: list[str] = []
        own: list[str] = []
        real_dirs: dict[str, bool] = {"": True}

        def real_dir(folder: str) -> bool:
            """Whether every component of ``folder`` is a folder (never a link)."""
            if folder not in real_dirs:
                parent, _, _name = folder.rpartition("/")
                try:
                    mode = os.lstat(self.workspace / folder).st_mode
                    real_dirs[folder] = real_dir(parent) and stat.S_ISDIR(mode)
                except OSError:
                    real_dirs[folder] = False
            return real_dirs[folder]

        for rel in paths:
            if rel.endswith("/"):
                own.append(rel)  # ls-files shows a nested repository as its folder
                continue
            if not real_dir(rel.rpartition("/")[0]):
                remove.append(rel)  # its folder is gone, or a link now: git cannot add it
                continue
            try:
                info = os.lstat(self.workspace / rel)
            except FileNotFoundError:
                update.append(rel)  # gone: --remove drops it
                continue
            except OSError:
                remove.append(rel)
                continue
            if stat.S_ISLNK(info.st_mode):
                update.append(rel)
            elif not stat.S_ISREG(info.st_mode):
                remove.append(rel)  # a folder where a file was, a FIFO, a socket...
            elif info.st_size > self.max_file_bytes:
                too_large.append(rel)
                remove.append(rel)
            else:
                update.append(rel)
        return update, remove, too_large, own

    # --- reading ----------------------------------------------------------------------------

    def entries(self, treeish: str) -> dict[str, Entry]:
        """Every file and link of a checkpoint: path -> (mode, object id)."""
        if treeish == EMPTY_TREE:
            return {}
        out: dict[str, Entry] = {}
        with self._locked():
            raw = self.git("ls-tree", "-r", "-z", "--full-tree", treeish)
        for item in _split(raw):
            meta, _, path = item.partition("\t")
            mode, kind, oid = meta.split(" ")
            if kind == "blob":
                out[path] = (mode, oid)
        return out

    def changed(self, old: str, new: str) -> dict[str, tuple[Entry | None, Entry | None]]:
        """Paths whose file differs between two checkpoints: path -> (old, new)."""
        if old == new:
            return {}
        with self._locked():
            raw = self.git("diff-tree", "-r", "-z", "--no-renames", "--no-ext-diff", old, new)
        items = _split(raw)
        out: dict[str, tuple[Entry | None, Entry | None]] = {}
        for meta, path in zip(items[0::2], items[1::2], strict=False):
            old_mode, new_mode, old_id, new_id, _status = meta.lstrip(":").split(" ")
            before = None if set(old_id) == {"0"} else (old_mode, old_id)
            after = None if set(new_id) == {"0"} else (new_mode, new_id)
            out[path] = (before, after)
        return out

    def blobs(self, ids: Iterable[str]) -> dict[str, bytes]:
        """The content of git objects (one ``cat-file --batch``)."""
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return {}
        with self._locked():
            raw = self.git("cat-file", "--batch", stdin="".join(f"{i}\n" for i in wanted).encode())
        out: dict[str, bytes] = {}
        pos = 0
        for oid in wanted:
            end = raw.index(b"\n", pos)
            header = raw[pos:end].decode().split(" ")
            pos = end + 1
            if len(header) < 3 or header[1] == "missing":
                continue
            size = int(header[2])
            out[oid] = raw[pos : pos + size]
            pos += size + 1
        return out

    def uncaptured(self, commit: str) -> set[str]:
        """What a checkpoint did not capture (too large, repositories of their own)."""
        with self._locked():
            raw = self.git("cat-file", "commit", commit)
        _, _, message = raw.decode("utf-8", "replace").partition("\n\n")
        try:
            data = json.loads(message.split("\n\n", 1)[1])
            return {*data.get("tooLarge", []), *data.get("ownRepositories", [])}
        except (IndexError, ValueError, AttributeError):
            return set()

    def tree_of(self, commit: str) -> str:
        with self._locked():
            return self.git("rev-parse", f"{commit}^{{tree}}").decode().strip()

    def delete_refs(self, prefix: str) -> None:
        with self._locked():
            raw = self.git("for-each-ref", "--format=%(refname)", prefix)
            refs = raw.decode().split()
            if refs:
                self.git(
                    "update-ref", "--stdin", stdin="".join(f"delete {r}\n" for r in refs).encode()
                )


def _cache_key(snap: Snapshot) -> str:
    return json.dumps([snap.tree, snap.too_large, snap.own_repositories])


def _split(raw: bytes) -> list[str]:
    return [p for p in raw.decode("utf-8", "surrogateescape").split("\0") if p]


def _join(paths: Sequence[str]) -> bytes:
    return b"".join(p.encode("utf-8", "surrogateescape") + b"\0" for p in paths)


def blob_id(data: bytes) -> str:
    """The git object id of a blob with this content (what ``hash-object`` would say)."""
    import hashlib  # noqa: PLC0415

    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()
