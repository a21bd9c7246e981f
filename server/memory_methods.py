"""What ``agent/sessions``, ``agent/session/load``, ``agent/session/delete``, ``agent/changes``
and ``agent/rewind`` do, and how a session saved by an earlier server is opened again.

Disk and git work runs in worker threads (:class:`~engine.memory.workspace_memory.
WorkspaceMemory`); a data folder that cannot be used is a -32600 error with
``data.reason: "memory_unavailable"``, never a crash.
"""

from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import replace
from typing import TYPE_CHECKING

from engine.memory.checkpoints import (
    RewindPlan,
    TurnCheckpoints,
    describe_changes,
    plan_rewind,
    turn_span,
)
from engine.memory.journal import checkpoint_ref
from engine.memory.rewind import Applied, apply_steps
from engine.memory.shadow import ShadowError, ShadowRepo
from engine.memory.store import StoredSession, StoreError
from server.errors import InvalidParams, InvalidRequest, unknown_session
from server.protocol import (
    BusySessionData,
    ChangesParams,
    ChangesResult,
    FileChangeInfo,
    HistoryToolCall,
    HistoryTurn,
    InvalidParamsData,
    MemoryUnavailableData,
    RewindConflict,
    RewindFile,
    RewindParams,
    RewindResult,
    RewindSkipped,
    SessionDeleteResult,
    SessionInfo,
    SessionLoadResult,
    SessionParams,
    SessionsParams,
    SessionsResult,
)
from server.resume import SESSION_ID, memory_unavailable, open_saved, stored_session
from server.sessions import Session, turn_number

if TYPE_CHECKING:
    from server.service import AgentService

logger = logging.getLogger(__name__)


def iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def unknown_turn(turn_id: str) -> InvalidParams:
    return InvalidParams(
        f"Invalid params: turnId: unknown turn {turn_id!r} of this session",
        InvalidParamsData(fields=["turnId"]),
    )


def busy(session: Session) -> InvalidRequest:
    return InvalidRequest(
        f"Session {session.session_id} is still running a turn ({session.active_turn_id}); wait "
        "for it or send agent/cancel first.",
        BusySessionData(session_id=session.session_id),
    )


def _history(stored: StoredSession) -> list[HistoryTurn]:
    turns = []
    for turn in stored.turns:
        turns.append(
            HistoryTurn(
                turn_id=f"{stored.row.session_id}:{turn.n}",
                prompt=turn.prompt,
                text=turn.text or "",
                stop_reason=turn.stop_reason,
                tool_calls=[
                    HistoryToolCall(
                        id=c.call_id,
                        name=c.name,
                        arguments=c.arguments,
                        status=c.status,
                        exit_code=c.exit_code,
                        result=c.result,
                        decided_by=c.decided_by,
                    )
                    for c in turn.calls
                ],
                started=iso(turn.started),
                changed_files=turn.checkpoint_before is not None,
                rewound=turn.rewound,
            )
        )
    return turns


class MemoryMethods:
    def __init__(self, service: AgentService) -> None:
        self._service = service

    async def _open(self, session_id: str) -> Session:
        service = self._service
        return await open_saved(service.sessions, service.memory, service.box_for, session_id)

    # --- sessions ---------------------------------------------------------------------------

    async def sessions(self, _params: SessionsParams) -> SessionsResult:
        service = self._service
        found: list[SessionInfo] = []
        if service.memory.settings.sessions:
            try:
                rows = await service.memory.read(lambda db: db.sessions())
            except StoreError as exc:
                raise memory_unavailable(exc) from exc
            for row in rows:
                found.append(
                    SessionInfo(
                        session_id=row.session_id,
                        title=row.title,
                        turns=row.turns,
                        created=iso(row.created),
                        last_activity=iso(row.updated),
                        model=row.model,
                        open=service.sessions.get(row.session_id) is not None,
                    )
                )
        listed = {s.session_id for s in found}
        for session in service.sessions.all():  # not saved (memory.sessions is off)
            if session.session_id not in listed and session.turns:
                first = next(
                    (m.content for m in session.conversation.messages if m.role == "user"), ""
                )
                now = iso(time.time())
                found.append(
                    SessionInfo(
                        session_id=session.session_id,
                        title=first.splitlines()[0][:80] if first else "",
                        turns=session.turns,
                        created=now,
                        last_activity=now,
                        model=service.models.model_name,
                        open=True,
                    )
                )
        return SessionsResult(sessions=found)

    async def load(self, params: SessionParams) -> SessionLoadResult:
        service = self._service
        if not service.memory.settings.sessions:
            raise InvalidRequest(
                "Sessions are not saved (memory.sessions is false), so there is no history to "
                "load.",
                MemoryUnavailableData(detail="memory.sessions is false"),
            )
        session = await self._open(params.session_id)
        stored = await stored_session(service.memory, params.session_id)
        if stored is None:  # open here, but not saved yet (its first turn is starting)
            return SessionLoadResult(
                session_id=session.session_id,
                title="",
                turns=[],
                allowed_tools=sorted(session.conversation.allowed_tools),
            )
        return SessionLoadResult(
            session_id=session.session_id,
            title=stored.row.title,
            turns=_history(stored),
            allowed_tools=sorted(session.conversation.allowed_tools),
        )

    async def delete(self, params: SessionParams) -> SessionDeleteResult:
        service = self._service
        session_id = params.session_id
        session = service.sessions.get(session_id)
        if session is not None and session.busy:
            raise busy(session)
        deleted = session is not None
        if session is not None:
            service.sessions.remove(session_id)
        if SESSION_ID.fullmatch(session_id) and service.memory.settings.sessions:
            try:
                deleted = await service.memory.read(lambda db: db.delete(session_id)) or deleted
            except StoreError as exc:
                raise memory_unavailable(exc) from exc
            if service.memory.repo() is not None:
                # on failure the checkpoints stay unreferenced; nothing reads them any more
                with contextlib.suppress(ShadowError):
                    await service.memory.in_repo(
                        lambda repo: repo.delete_refs(f"refs/gatehouse/{session_id}/")
                    )
        return SessionDeleteResult(deleted=deleted)

    # --- changes and rewind -----------------------------------------------------------------

    async def _checkpoints(
        self, session_id: str, turn_id: str
    ) -> tuple[int, list[TurnCheckpoints], Session | None]:
        service = self._service
        session = service.sessions.get(session_id)
        n = turn_number(session_id, turn_id)
        if session is not None:
            if n is None or not 1 <= n <= session.turns:
                raise unknown_turn(turn_id)
            return n, list(session.memory.checkpoints), session
        stored = await stored_session(service.memory, session_id)
        if stored is None:
            raise unknown_session(session_id)
        if n is None or n not in {t.n for t in stored.turns}:
            raise unknown_turn(turn_id)
        turns = [
            TurnCheckpoints(t.n, t.checkpoint_before, t.checkpoint_after, t.files_undone)
            for t in stored.turns
        ]
        return n, turns, None

    async def changes(self, params: ChangesParams) -> ChangesResult:
        n, turns, _session = await self._checkpoints(params.session_id, params.turn_id)
        empty = ChangesResult(
            session_id=params.session_id, turn_id=params.turn_id, checkpoint=False, files=[]
        )
        if not any(t.n == n and t.before for t in turns):
            return empty

        def compute(repo: ShadowRepo) -> list[FileChangeInfo]:
            before, after = turn_span(turns, n, lambda: repo.snapshot("now", ignored=False).commit)
            return [
                FileChangeInfo(path=c.path, action=c.action, diff=c.diff, binary=c.binary)
                for c in describe_changes(repo, before, after)
            ]

        try:
            files = await self._service.memory.in_repo(compute)
        except ShadowError as exc:
            raise memory_unavailable(exc) from exc
        return ChangesResult(
            session_id=params.session_id, turn_id=params.turn_id, checkpoint=True, files=files
        )

    async def rewind(self, params: RewindParams) -> RewindResult:
        service = self._service
        session = service.sessions.get(params.session_id) or await self._open(params.session_id)
        if session.busy:
            raise busy(session)
        n, turns, _ = await self._checkpoints(params.session_id, params.turn_id)
        result = RewindResult(applied=True, files=[], conflicts=[], skipped=[], conversation=False)
        if params.scope in ("files", "both"):
            plan = await self._plan(session, n, turns)
            if plan is not None:
                conflicts = [
                    RewindConflict(path=c.path, reason=c.reason, detail=c.detail)
                    for c in plan.conflicts
                ]
                skipped = [RewindSkipped(path=p, detail=d) for p, d in plan.skipped]
                if conflicts and not params.force:
                    return RewindResult(
                        applied=False,
                        files=[],
                        conflicts=conflicts,
                        skipped=skipped,
                        conversation=False,
                        checkpoint=plan.now,
                    )
                applied = await self._apply(session, params, plan)
                await self._mark_undone(session, n)
                result = RewindResult(
                    applied=True,
                    files=[RewindFile(path=p, action=a) for p, a in applied.restored],
                    conflicts=conflicts,
                    skipped=skipped + [RewindSkipped(path=p, detail=d) for p, d in applied.skipped],
                    conversation=False,
                    checkpoint=plan.now,
                )
        if params.scope in ("conversation", "both"):
            await self._rewind_conversation(session, n, params)
            result = result.model_copy(update={"conversation": True})
        return result

    async def _plan(
        self, session: Session, n: int, turns: list[TurnCheckpoints]
    ) -> RewindPlan | None:
        if not any(t.n >= n and t.before and not t.undone for t in turns):
            return None
        workspace = self._service.memory.workspace
        ref = checkpoint_ref(session.session_id, n, f"rewind-{int(time.time() * 1000)}")

        def plan(repo: ShadowRepo) -> RewindPlan | None:
            from sandbox.autorun import AUTORUN_NAMES, AutorunScanner  # noqa: PLC0415

            now = repo.snapshot(f"before rewinding to turn {n}", ref, ignored=False).commit
            roots = list(AutorunScanner(workspace).find())

            def is_autorun(path: str) -> bool:
                if any(part in AUTORUN_NAMES for part in path.split("/")):
                    return True
                return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)

            return plan_rewind(repo, turns, n, now, is_autorun)

        try:
            return await self._service.memory.in_repo(plan)
        except ShadowError as exc:
            raise memory_unavailable(exc) from exc

    async def _apply(self, session: Session, params: RewindParams, plan: RewindPlan) -> Applied:
        memory = self._service.memory
        head = {
            "session": session.session_id,
            "turn": params.turn_id,
            "workspace": str(memory.workspace),
        }
        problem = await memory.audit_now(
            {
                "type": "rewind",
                **head,
                "scope": params.scope,
                "force": params.force,
                "checkpoint": plan.now,
                "writes": [s.path for s in plan.steps],
                "conflicts": [c.path for c in plan.conflicts],
            }
        )
        if problem is not None:
            raise memory_unavailable(
                RuntimeError(
                    f"the rewind's audit record could not be written ({problem}); "
                    "nothing was changed"
                )
            )
        try:
            applied = await memory.in_repo(
                lambda repo: apply_steps(repo, memory.workspace, plan.steps, force=params.force)
            )
        except (ShadowError, OSError) as exc:
            raise memory_unavailable(exc) from exc
        # On disk before the answer: what the client is told was written is on record.
        problem = await memory.audit_now(
            {
                "type": "rewind_end",
                **head,
                "written": [{"path": p, "action": a} for p, a in applied.restored],
                "skipped": [p for p, _ in applied.skipped],
            }
        )
        if problem is not None:
            logger.warning("the rewind's end record could not be written: %s", problem)
        return applied

    async def _mark_undone(self, session: Session, n: int) -> None:
        """Turns ``n`` and later have been written back: later rewinds leave them out."""
        state = session.memory
        state.checkpoints = [replace(c, undone=True) if c.n >= n else c for c in state.checkpoints]
        memory = self._service.memory
        if memory.settings.sessions:
            session_id = session.session_id
            memory.write("the rewind", lambda db: db.undo_files(session_id, n))

    async def _rewind_conversation(self, session: Session, n: int, params: RewindParams) -> None:
        state = session.memory
        keep = next((i for i, turn in enumerate(state.message_turns) if turn >= n), None)
        if keep is not None:
            del session.conversation.messages[keep:]
            del state.message_turns[keep:]
        for tool, granted in list(state.grants.items()):
            if granted >= n:  # a grant given in a rewound turn goes with it
                del state.grants[tool]
                session.conversation.allowed_tools.discard(tool)
        memory = self._service.memory
        if params.scope == "conversation":
            memory.audit_record(
                {
                    "type": "rewind",
                    "session": session.session_id,
                    "turn": params.turn_id,
                    "workspace": str(memory.workspace),
                    "scope": "conversation",
                }
            )
        if memory.settings.sessions:
            session_id = session.session_id
            try:
                await memory.read(lambda db: db.rewind_conversation(session_id, n))
            except StoreError as exc:
                raise memory_unavailable(exc) from exc
