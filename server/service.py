"""The agent service: what ``agent/chat``, ``agent/cancel`` and ``agent/status`` do.

It holds the server's state (options, workspace, backend, sessions, the pending approvals) and
adapts the engine's loop to the connection. Everything that can reject a request runs before the
model is touched.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine import __version__
from engine.approvals import Approver
from engine.backends.base import GenerationOptions
from engine.events import StatusNote
from engine.gate import GatePolicy, unwireable_flag
from engine.tools import BUILTIN_TOOL_NAMES, builtin_tools
from engine.turns import TurnControl, TurnRequest, TurnResult
from sandbox.tiers import Sandbox, unsandboxed
from server.approvals import Approvals, ClientChannel, PromptSettings, PromptStyle
from server.backends import BackendManager
from server.documents import OpenDocuments
from server.errors import InvalidParams, InvalidRequest, unknown_session
from server.model_queue import ModelQueue, QueuedBackend, waiting_text
from server.options import ServerOptions
from server.progress import WorkDone
from server.protocol import (
    AGENT_STREAM,
    BusySessionData,
    CancelParams,
    CancelResult,
    ChatParams,
    ChatResult,
    GatehouseCapabilities,
    InvalidParamsData,
    SandboxReport,
    SessionSummary,
    StatusParams,
    StatusResult,
    ToolCallSummary,
    UnwiredGateData,
)
from server.rules import RulesService
from server.sessions import Session, SessionStore

if TYPE_CHECKING:
    from engine.memory.workspace_memory import MemorySettings, WorkspaceMemory
    from sandbox.box import Box
from server.stream import CoalescingStream, TurnStream

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ClientFeatures:
    """What the connected editor said it can do."""

    tool_confirm: bool = False
    show_message_request: bool = False
    work_done_progress: bool = False


class Notifier:
    """Sends notifications; a separate seam so tests and benchmarks can count them."""

    def __init__(self, channel: Any) -> None:
        self._channel = channel

    def __call__(self, message: dict[str, Any]) -> None:
        self._channel.notify(AGENT_STREAM, message)


class AgentService:
    def __init__(
        self,
        channel: ClientChannel,
        notify: Any,
        *,
        options: ServerOptions,
        workspace: Path,
        sandbox: Sandbox | None = None,
        scratch_root: Path | None = None,
    ) -> None:
        self.channel = channel
        self.notify = notify
        self.options = options
        self.workspace = workspace
        self.sandbox = sandbox or unsandboxed()
        self.scratch_root = scratch_root
        self.client = ClientFeatures()
        self.sessions = SessionStore()
        self.approvals = Approvals(channel)
        self.models = BackendManager(options)
        self.model_queue = ModelQueue()
        self.rules = RulesService(self.sessions, workspace)
        self.documents = OpenDocuments()
        """The editor's open documents (kept up to date by the server's did* handlers)."""
        self._memory: WorkspaceMemory | None = None
        self._memory_lock = threading.Lock()

    # --- lifecycle --------------------------------------------------------------------------

    def configure(
        self, options: ServerOptions, workspace: Path, client: ClientFeatures, sandbox: Sandbox
    ) -> None:
        self.options, self.workspace, self.client = options, workspace, client
        self.sandbox = sandbox
        self.models = BackendManager(options)
        self.rules.configure(workspace)
        with self._memory_lock:
            self._memory = None  # made again for this workspace and these settings
        # Loaded and opened beside the event loop, after initialize is answered: a shorter
        # cold start (the first request that needs it waits for it).
        threading.Thread(target=self._warm_memory, name="gatehouse-memory", daemon=True).start()

    def _warm_memory(self) -> None:
        self.memory.warm_up()

    @property
    def memory(self) -> WorkspaceMemory:
        """This workspace's sessions, checkpoints and the audit log (in the data folder)."""
        with self._memory_lock:
            if self._memory is None:
                from engine.memory.workspace_memory import WorkspaceMemory  # noqa: PLC0415

                self._memory = WorkspaceMemory(self.workspace, memory_settings(self.options))
            return self._memory

    def reconfigure(self, options: ServerOptions) -> None:
        """Settings re-read (``workspace/didChangeConfiguration``): they apply from the next
        request; a model made with other backend settings is made again when next used. (Where
        memory is kept applies when the server starts, like the sandbox.)"""
        self.options = options
        self.models.reconfigure(options)

    def sandbox_report(self) -> SandboxReport:
        info = self.sandbox.info
        return SandboxReport(
            level=info.level,
            network=info.network,
            min_level=self.sandbox.settings.min_level,
            reason=info.reason,
        )

    def capabilities(self) -> GatehouseCapabilities:
        return GatehouseCapabilities(
            version=__version__, tools=list(BUILTIN_TOOL_NAMES), sandbox=self.sandbox_report()
        )

    async def stop_all(self, grace_seconds: float) -> None:
        """Cancel every running turn (each returns ``cancelled``: its approvals are withdrawn,
        its processes killed) and wait up to ``grace_seconds`` for them to end."""
        controls = [s.active for s in self.sessions.all() if s.active is not None]
        for control in controls:
            control.cancel()
        tasks = [c.task for c in controls if c.task is not None and not c.task.done()]
        if tasks:
            await asyncio.wait(tasks, timeout=grace_seconds)

    # --- agent/status -----------------------------------------------------------------------

    def status(self, _params: StatusParams | None = None) -> StatusResult:
        return StatusResult(
            version=__version__,
            backend=self.options.backend,
            model=self.models.model_name,
            model_loaded=self.models.current is not None,
            workspace=str(self.workspace),
            sandbox=self.sandbox_report(),
            sessions=[
                SessionSummary(
                    session_id=s.session_id,
                    turns=s.turns,
                    running=s.busy,
                    allowed_tools=sorted(s.conversation.allowed_tools),
                )
                for s in self.sessions.all()
            ],
        )

    # --- agent/cancel -----------------------------------------------------------------------

    def cancel(self, params: CancelParams) -> CancelResult:
        session = self.sessions.get(params.session_id)
        if session is None:
            raise unknown_session(params.session_id)
        cancelled = session.active.cancel() if session.active else False
        return CancelResult(cancelled=cancelled)

    # --- agent/chat -------------------------------------------------------------------------

    def _turn_request(self, params: ChatParams) -> TurnRequest:
        unknown = [n for n in params.enabled_tools or [] if n not in BUILTIN_TOOL_NAMES]
        if unknown:
            raise InvalidParams(
                f"Invalid params: enabledTools: unknown tool(s) {', '.join(map(repr, unknown))}; "
                f"built-in tools are {', '.join(BUILTIN_TOOL_NAMES)}",
                InvalidParamsData(fields=["enabledTools"]),
            )
        o = self.options
        policy = GatePolicy(
            confirm_tool_calls=_pick(params.confirm_tool_calls, o.confirm_tool_calls),
            confirm_code_execution=_pick(params.confirm_code_execution, o.confirm_code_execution),
            bypass_permissions=_pick(params.bypass_permissions, o.bypass_permissions),
            confirm_file_edits=_pick(params.confirm_file_edits, o.confirm_file_edits),
        )
        defaults = self.models.defaults(params.model)
        tools = params.enabled_tools if params.enabled_tools is not None else defaults.tools
        enabled = None if tools is None else frozenset(tools)
        return TurnRequest(
            prompt=params.prompt,
            policy=policy,
            tools_enabled=params.enable_tools,
            enabled_tools=enabled,
            max_tool_calls=params.max_tool_calls,
            tool_rounds=defaults.tool_rounds,
            options=GenerationOptions(params.max_tokens, params.temperature, params.seed),
            tool_timeout_seconds=o.tool_timeout_seconds,
        )

    def box_for(self, session_id: str) -> Box:
        """A new session's box: the workspace, this machine's sandbox and a private tmp (removed
        with the server's scratch root)."""
        from sandbox.box import Box  # noqa: PLC0415 - the runner loads with the first session

        scratch = None
        if self.scratch_root is not None:
            scratch = self.scratch_root / session_id
            scratch.mkdir(mode=0o700, exist_ok=True)
        return Box(self.workspace, self.sandbox, scratch)

    # --- sessions (shared by the transports) -----------------------------------------------

    @property
    def sessions_persist(self) -> bool:
        """Whether sessions outlive the process (``session/load`` in ACP mode)."""
        return self.memory.settings.sessions

    def new_session(self) -> Session:
        return self.sessions.create(self.box_for)

    async def restore_session(self, session_id: str) -> Session:
        """The session, open in this server: opened from what an earlier server saved (with its
        conversation, bound to a new box) if it is not yet. Raises -32602 for an unknown
        session, -32600 when another live server has it open."""
        from server.resume import open_saved  # noqa: PLC0415 - with the memory

        return await open_saved(self.sessions, self.memory, self.box_for, session_id)

    def _check_gate_is_wired(self, request: TurnRequest) -> None:
        if self.client.tool_confirm or self.client.show_message_request:
            return
        names = BUILTIN_TOOL_NAMES if request.enabled_tools is None else request.enabled_tools
        flag = unwireable_flag(
            request.policy,
            tools_enabled=request.tools_enabled,
            enabled_tools=[builtin_tools()[name] for name in names],
            max_tool_calls=request.max_tool_calls,
        )
        if flag is not None:
            raise InvalidRequest(
                f"{flag} is on, but this client declared no editor capabilities (neither "
                "textDocument nor window) and does not answer toolConfirm, so approvals cannot "
                "be asked. An editor: send its capabilities in initialize (it is then asked with "
                "window/showMessageRequest, Deny first). A harness: advertise "
                "capabilities.experimental.toolConfirm and answer toolConfirm. Or turn off the "
                "flag or tools for this request.",
                UnwiredGateData(param=flag),
            )

    async def _load(self, model: str | None, stream: CoalescingStream) -> Any:
        """The model, loaded (progress as status events and, where supported, $/progress)."""
        if self.models.current is not None and self.models.is_current(model):
            return await self.models.ensure(model, lambda _text: None)
        bar = WorkDone(self.channel, self.client.work_done_progress, "Gatehouse: loading model")
        await bar.begin("Loading model…")

        def progress(text: str) -> None:
            stream.emit(StatusNote(text))
            bar.report(text)

        try:
            return await self.models.ensure(model, progress)
        finally:
            bar.end("Model ready")

    async def _session_for(self, params: ChatParams) -> Session:
        if params.session_id is None:
            return self.new_session()
        session = self.sessions.get(params.session_id)
        if session is None:  # saved by an earlier server?
            session = await self.restore_session(params.session_id)
        if session.busy:
            raise InvalidRequest(
                f"Session {session.session_id} is still running a turn "
                f"({session.active_turn_id}); wait for it or send agent/cancel first.",
                BusySessionData(session_id=session.session_id),
            )
        return session

    def check_turn(self, params: ChatParams) -> TurnRequest:
        """Every check that can reject a request, before any model is loaded or run."""
        request = self._turn_request(params)
        self._check_gate_is_wired(request)
        others = [s for s in self.sessions.all() if s.session_id != params.session_id]
        self.models.check_switch(params.model, any(s.busy for s in others))
        return request

    def prompt_settings(self, style: PromptStyle) -> PromptSettings:
        return PromptSettings(
            style=style,
            sandbox=self.sandbox.info,
            workspace=str(self.workspace),
            timeout_seconds=self.options.confirm_timeout_seconds,
        )

    async def run_turn(
        self,
        session: Session,
        request: TurnRequest,
        model: str | None,
        make_stream: Callable[[str], CoalescingStream],
        make_approver: Callable[[str, CoalescingStream], Approver],
    ) -> tuple[str, TurnResult]:
        """Run one checked turn of ``session`` on the engine's loop, whatever the transport:
        ``make_stream(turn_id)`` carries its events, ``make_approver(turn_id, stream)`` asks
        for its gated calls. Returns the turn id and the result (``cancelled`` after a cancel
        through the session's control)."""
        turn_id = session.next_turn_id()
        control = TurnControl()
        task = asyncio.current_task()
        assert task is not None
        control.bind(task)
        session.active, session.active_turn_id = control, turn_id
        stream = make_stream(turn_id)
        from engine.memory.journal import TurnJournal  # noqa: PLC0415 - with the first turn

        journal = TurnJournal(
            self.memory, session.memory, session.turns, emit=stream.emit, sandbox=self.sandbox.info
        )
        result = TurnResult("cancelled", "", [])
        try:
            if session.resumed_note is not None:
                stream.emit(StatusNote(session.resumed_note))
                session.resumed_note = None
            request = await self._with_rules(request, stream)
            try:
                await journal.begin(
                    request.prompt, model=self.models.model_name, settings=turn_settings(request)
                )
                backend = await self._load(model, stream)
            except asyncio.CancelledError:
                if not control.cancel_requested:
                    raise  # $/cancelRequest for the chat itself: -32800
                task.uncancel()  # agent/cancel before the model ran: a normal, empty result
                return turn_id, result
            if backend.one_at_a_time:  # a local model: one model turn at a time, FIFO

                def tell(ahead: int) -> None:
                    stream.emit(StatusNote(waiting_text(ahead)))

                backend = QueuedBackend(backend, self.model_queue, tell)
            from engine.loop import AgentLoop  # noqa: PLC0415 - loaded with the first turn

            loop = AgentLoop(backend, builtin_tools(), session.box, documents=self.documents)
            result = await loop.run(
                session.conversation,
                request,
                make_approver(turn_id, stream),
                stream.emit,
                control,
                hooks=journal,
            )
        finally:
            try:
                model_name = self.models.model_name
                await asyncio.shield(journal.end(result.stop_reason, result.text, model_name))
            finally:
                stream.flush()
                session.active, session.active_turn_id = None, None
        return turn_id, result

    async def chat(self, params: ChatParams) -> ChatResult:
        request = self.check_turn(params)
        session = await self._session_for(params)
        prompts = self.prompt_settings(
            "toolConfirm"
            if self.client.tool_confirm
            else "showMessageRequest"
            if self.client.show_message_request
            else "none"
        )

        def approver(turn_id: str, stream: CoalescingStream) -> Approver:
            return self.approvals.for_turn(session.session_id, turn_id, prompts, stream.flush)

        turn_id, result = await self.run_turn(
            session,
            request,
            params.model,
            lambda turn_id: TurnStream(self.notify, session.session_id, turn_id),
            approver,
        )
        return self._result(session, turn_id, result)

    async def _with_rules(self, request: TurnRequest, stream: CoalescingStream) -> TurnRequest:
        """The request with the rules in force (read off the event loop); what is wrong in the
        rules files is said once, as a status line."""
        rules, problems = await asyncio.to_thread(self.rules.load)
        for problem in self.rules.new_problems(problems):
            stream.emit(StatusNote(f"Rules: {problem}"))
        user = self.rules.user_rules()  # resolved by load() above: no disk access here
        return replace(
            request,
            rules=rules,
            user_rules_folder=None if user is None else user.folder,
            rules_scope=self.rules.scope,
        )

    @staticmethod
    def _result(session: Session, turn_id: str, result: TurnResult) -> ChatResult:
        return ChatResult(
            session_id=session.session_id,
            turn_id=turn_id,
            stop_reason=result.stop_reason,
            text=result.text,
            tool_calls=[
                ToolCallSummary(
                    id=r.id,
                    name=r.name,
                    arguments=r.arguments,
                    status=r.status,
                    exit_code=r.exit_code,
                )
                for r in result.tool_calls
            ],
        )


def _pick(override: bool | None, default: bool) -> bool:
    return default if override is None else override


def memory_settings(options: ServerOptions) -> MemorySettings:
    from engine.memory.workspace_memory import MemorySettings  # noqa: PLC0415

    memory = options.memory
    return MemorySettings(
        sessions=memory.sessions,
        checkpoints=memory.checkpoints,
        max_file_bytes=memory.checkpoint_max_file_bytes,
    )


def turn_settings(request: TurnRequest) -> dict[str, Any]:
    """The settings a turn ran with, as saved with it."""
    policy = request.policy
    return {
        "confirmToolCalls": policy.confirm_tool_calls,
        "confirmCodeExecution": policy.confirm_code_execution,
        "bypassPermissions": policy.bypass_permissions,
        "enableTools": request.tools_enabled,
        "enabledTools": None if request.enabled_tools is None else sorted(request.enabled_tools),
        "maxToolCalls": request.max_tool_calls,
        "maxTokens": request.options.max_tokens,
        "temperature": request.options.temperature,
        "seed": request.options.seed,
    }
