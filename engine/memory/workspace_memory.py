"""One workspace's memory as a server uses it: the sessions database, the audit log and the
checkpoints, each behind the thread that does its disk work.

Nothing here blocks the event loop. Database writes and audit appends go, in order, to one
worker thread (:class:`DiskWorker`): a turn hands them over and goes on, and awaits only what it
must (the audit record of a call before that call runs). Checkpoints run in their own thread
(git may take a while on a big workspace) and hold the repository's lock.

A data folder that cannot be written is not fatal: the failure is kept in :attr:`problem` and
said to the user; the conversation goes on in memory; code execution is refused because its
audit record cannot be written (fail closed). Every operation tries again, so freeing the disk
is enough.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from engine.datadir import exposed_in
from engine.memory.audit import AuditLog, AuditUnavailable
from engine.memory.places import Places
from engine.memory.shadow import ShadowError, ShadowRepo, Snapshot, find_git
from engine.memory.store import SessionDB, StoreError, process_identity

logger = logging.getLogger(__name__)

P = ParamSpec("P")
T = TypeVar("T")

DEFAULT_MAX_FILE_BYTES = 10 << 20


@dataclass(frozen=True)
class MemorySettings:
    sessions: bool = True
    """Keep conversations in the data folder."""
    checkpoints: bool = True
    """Take a checkpoint before the first change of every turn."""
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    """Files larger than this are not captured by checkpoints."""


class DiskWorker:
    """One thread that runs disk work in the order it was handed over."""

    def __init__(self, name: str) -> None:
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)

    def submit(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        return self._pool.submit(fn, *args, **kwargs)

    async def run(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        return await asyncio.wrap_future(self.submit(fn, *args, **kwargs))

    def shutdown(self) -> None:
        self._pool.shutdown(wait=True)


class WorkspaceMemory:
    """The memory of one workspace in one server."""

    def __init__(self, workspace: Path, settings: MemorySettings, root: Path | None = None) -> None:
        self.places = Places.for_workspace(workspace, root)
        if settings.sessions and self.exposed is not None:
            # a saved conversation there could be rewritten by approved code and fed to the model
            logger.warning("sessions are not saved: %s", self.exposed)
            settings = replace(settings, sessions=False)
        self.settings = settings
        self.owner = process_identity()
        self.worker = DiskWorker("gatehouse-memory")
        self.audit = AuditLog(self.places.audit_log)
        self._db: SessionDB | None = None
        self._repo: ShadowRepo | None = None
        self._git_problem: str | None = None
        self.problem: str | None = None
        """The last failure to write memory (None once writing works again)."""
        self._lock = threading.Lock()

    @property
    def workspace(self) -> Path:
        return self.places.workspace

    # --- the sessions database (worker thread) ----------------------------------------------

    def db(self) -> SessionDB:
        """The sessions database, opened on first use (worker thread only)."""
        if self._db is None:
            try:
                self.places.prepare()
            except OSError as exc:
                raise StoreError(f"cannot create {self.places.folder}: {exc.strerror}") from exc
            self._db = SessionDB(self.places.sessions_db)
        return self._db

    def warm_up(self) -> None:
        """Open the sessions database in the background (the first turn then does not wait)."""
        if self.settings.sessions:
            self.write("the session database", lambda _db: None)

    def write(self, what: str, fn: Callable[[SessionDB], Any]) -> Future[Any]:
        """Hand a database write to the worker; a failure is logged and kept in
        :attr:`problem` (the caller goes on)."""

        def job() -> Any:
            return fn(self.db())

        future = self.worker.submit(job)
        future.add_done_callback(lambda f: self._note(what, f))
        return future

    async def settled(self) -> None:
        """Wait until every write and audit record handed over so far is done."""
        await self.worker.run(lambda: None)

    async def read(self, fn: Callable[[SessionDB], T]) -> T:
        """Run a database read in the worker (raises :class:`StoreError`)."""
        return await self.worker.run(lambda: fn(self.db()))

    def _note(self, what: str, future: Future[Any]) -> None:
        error = None if future.cancelled() else future.exception()
        if error is None:
            if self.problem is not None and what != "audit":
                self.problem = None
            return
        message = str(error)
        if self.problem != message:
            logger.warning("could not save %s: %s", what, message)
        self.problem = message

    # --- the audit log (worker thread) -------------------------------------------------------

    def audit_record(self, record: dict[str, Any]) -> Future[str]:
        """Append an audit record after everything handed over before it."""
        future = self.worker.submit(self.audit.append, record)
        future.add_done_callback(lambda f: self._note("audit", f))
        return future

    async def audit_now(self, record: dict[str, Any]) -> str | None:
        """Append a record and wait until it is on disk; None, or why it is not."""
        try:
            await asyncio.wrap_future(self.audit_record(record))
        except AuditUnavailable as exc:
            return str(exc)
        return None

    # --- checkpoints (their own thread) -----------------------------------------------------

    def repo(self) -> ShadowRepo | None:
        """The shadow repository; None when checkpoints are off or git is not installed."""
        if not self.settings.checkpoints:
            return None
        with self._lock:
            if self._repo is None and self._git_problem is None:
                exposed = self.exposed
                if exposed is not None:  # git would read a configuration approved code can write
                    self._git_problem = exposed
                    return None
                try:
                    git = find_git(self.workspace)
                except ShadowError as exc:
                    self._git_problem = str(exc)
                    return None
                self._repo = ShadowRepo(
                    self.places.checkpoints,
                    self.workspace,
                    max_file_bytes=self.settings.max_file_bytes,
                    git=git,
                )
            return self._repo

    @property
    def exposed(self) -> str | None:
        """Why the data folder cannot be trusted: it lies inside the workspace, where approved
        code can write (None: it does not)."""
        return exposed_in(self.workspace, self.places.root)

    @property
    def checkpoints_off(self) -> str | None:
        """Why there are no checkpoints (None: there are)."""
        if not self.settings.checkpoints:
            return "checkpoints are off (memory.checkpoints)"
        self.repo()
        return self._git_problem

    async def snapshot(self, label: str, ref: str | None, *, ignored: bool = True) -> Snapshot:
        """A checkpoint of the workspace now (raises :class:`ShadowError`). The work finishes
        even if the awaiting task is cancelled (the repository stays consistent)."""
        repo = self.repo()
        if repo is None:
            raise ShadowError(self.checkpoints_off or "checkpoints are off")

        def take() -> Snapshot:
            try:
                self.places.prepare()
            except OSError as exc:
                raise ShadowError(f"cannot create {self.places.folder}: {exc.strerror}") from exc
            return repo.snapshot(label, ref, ignored=ignored)

        task = asyncio.ensure_future(asyncio.to_thread(take))
        return await asyncio.shield(task)

    async def in_repo(self, fn: Callable[[ShadowRepo], T]) -> T:
        """Run ``fn`` with the repository in a thread (raises :class:`ShadowError`)."""
        repo = self.repo()
        if repo is None:
            raise ShadowError(self.checkpoints_off or "checkpoints are off")
        return await asyncio.to_thread(fn, repo)

    # --- lifecycle --------------------------------------------------------------------------

    def close(self) -> None:
        """Release this server's sessions and close the files (at exit)."""
        self.worker.shutdown()  # what was handed over is written first
        if self._db is not None:
            try:
                self._db.release(self.owner)
            except StoreError as exc:
                logger.info("could not release the sessions: %s", exc)
            self._db.close()
        self.audit.close()
