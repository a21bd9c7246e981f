"""The agent service: what ``agent/chat``, ``agent/cancel`` and ``agent/status`` do.

It holds the server's state (options, workspace, backend, sessions, the pending approvals) and
adapts the engine's loop to the connection. Everything that can reject a request runs before the
model is touched.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine import __version__
from engine.backends.base import GenerationOptions
from engine.events import StatusNote
from engine.gate import GatePolicy, unwireable_flag
from engine.tools import BUILTIN_TOOL_NAMES, builtin_tools
from engine.turns import TurnControl, TurnRequest, TurnResult
from sandbox.tiers import Sandbox, unsandboxed
from server.approvals import Approvals, ClientChannel, PromptSettings
from server.backends import BackendManager
from server.documents import OpenDocuments
from server.errors import InvalidParams, InvalidRequest, unknown_session
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
    from sandbox.box import Box
from server.stream import TurnStream

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
        self.rules = RulesService(self.sessions, workspace)
        self.documents = OpenDocuments()
        """The editor's open documents (kept up to date by the server's did* handlers)."""

    # --- lifecycle --------------------------------------------------------------------------

    def configure(
        self, options: ServerOptions, workspace: Path, client: ClientFeatures, sandbox: Sandbox
    ) -> None:
        self.options, self.workspace, self.client = options, workspace, client
        self.sandbox = sandbox
        self.models = BackendManager(options)
        self.rules.configure(workspace)

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

    def _box_for(self, session_id: str) -> Box:
        """A new session's box: the workspace, this machine's sandbox and a private tmp (removed
        with the server's scratch root)."""
        from sandbox.box import Box  # noqa: PLC0415 - the runner loads with the first session

        scratch = None
        if self.scratch_root is not None:
            scratch = self.scratch_root / session_id
            scratch.mkdir(mode=0o700, exist_ok=True)
        return Box(self.workspace, self.sandbox, scratch)

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
                f"{flag} is on, but this client can answer neither toolConfirm nor "
                "window/showMessageRequest, so approvals cannot be asked. Advertise "
                "capabilities.experimental.toolConfirm, or turn off the flag or tools for "
                "this request.",
                UnwiredGateData(param=flag),
            )

    async def _load(self, model: str | None, stream: TurnStream) -> Any:
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

    def _session_for(self, params: ChatParams) -> Session:
        if params.session_id is None:
            return self.sessions.create(self._box_for)
        session = self.sessions.get(params.session_id)
        if session is None:
            raise unknown_session(params.session_id)
        if session.busy:
            raise InvalidRequest(
                f"Session {session.session_id} is still running a turn "
                f"({session.active_turn_id}); wait for it or send agent/cancel first.",
                BusySessionData(session_id=session.session_id),
            )
        return session

    async def chat(self, params: ChatParams) -> ChatResult:
        # Every check that can reject the request runs before any model is loaded or run.
        request = self._turn_request(params)
        self._check_gate_is_wired(request)
        others = [s for s in self.sessions.all() if s.session_id != params.session_id]
        self.models.check_switch(params.model, any(s.busy for s in others))
        session = self._session_for(params)

        turn_id = session.next_turn_id()
        control = TurnControl()
        task = asyncio.current_task()
        assert task is not None
        control.bind(task)
        session.active, session.active_turn_id = control, turn_id
        stream = TurnStream(self.notify, session.session_id, turn_id)
        prompts = PromptSettings(
            style=(
                "toolConfirm"
                if self.client.tool_confirm
                else "showMessageRequest"
                if self.client.show_message_request
                else "none"
            ),
            sandbox=self.sandbox.info,
            workspace=str(self.workspace),
            timeout_seconds=self.options.confirm_timeout_seconds,
        )
        try:
            request = await self._with_rules(request, stream)
            try:
                backend = await self._load(params.model, stream)
            except asyncio.CancelledError:
                if not control.cancel_requested:
                    raise  # $/cancelRequest for the chat itself: -32800
                task.uncancel()  # agent/cancel while the model loaded: a normal, empty result
                result = TurnResult("cancelled", "", [])
                return self._result(session, turn_id, result)
            from engine.loop import AgentLoop  # noqa: PLC0415 - loaded with the first turn

            loop = AgentLoop(backend, builtin_tools(), session.box, documents=self.documents)
            result = await loop.run(
                session.conversation,
                request,
                self.approvals.for_turn(session.session_id, turn_id, prompts, stream.flush),
                stream.emit,
                control,
            )
        finally:
            stream.flush()
            session.active, session.active_turn_id = None, None
        return self._result(session, turn_id, result)

    async def _with_rules(self, request: TurnRequest, stream: TurnStream) -> TurnRequest:
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
