"""The agent service: what ``agent/chat``, ``agent/cancel`` and ``agent/status`` do.

It holds the server's state (options, workspace, backend, sessions, the approval broker) and
adapts the engine's loop to the connection. Everything that can reject a request runs before the
model is touched.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from engine import __version__
from engine.backends.base import GenerationOptions
from engine.events import StatusNote
from engine.gate import GatePolicy, unwireable_flag
from engine.loop import AgentLoop, TurnControl, TurnRequest, TurnResult
from engine.tools import BUILTIN_TOOL_NAMES, BUILTIN_TOOLS
from sandbox.tiers import Sandbox, unsandboxed
from server.approvals import ApprovalAsker, ClientChannel
from server.backends import BackendManager
from server.broker import ApprovalBroker
from server.errors import InvalidParams, InvalidRequest
from server.options import ServerOptions
from server.progress import WorkDone
from server.protocol import (
    AGENT_STREAM,
    CancelParams,
    ChatParams,
    ChatResult,
    ToolCallSummary,
)
from server.sessions import Session, SessionStore
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
        self.broker = ApprovalBroker()
        self.models = BackendManager(options)

    # --- lifecycle --------------------------------------------------------------------------

    def configure(
        self, options: ServerOptions, workspace: Path, client: ClientFeatures, sandbox: Sandbox
    ) -> None:
        self.options, self.workspace, self.client = options, workspace, client
        self.sandbox = sandbox
        self.models = BackendManager(options)

    def sandbox_report(self) -> dict[str, Any]:
        info = self.sandbox.info
        return {**info.wire(), "reason": info.reason, "minLevel": self.sandbox.settings.min_level}

    def capabilities(self) -> dict[str, Any]:
        return {
            "version": __version__,
            "tools": list(BUILTIN_TOOL_NAMES),
            "sandbox": self.sandbox_report(),
        }

    # --- agent/status -----------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        return {
            "version": __version__,
            "backend": self.options.backend,
            "model": self.models.model_name,
            "modelLoaded": self.models.current is not None,
            "workspace": str(self.workspace),
            "sandbox": self.sandbox_report(),
            "sessions": [s.summary() for s in self.sessions.all()],
        }

    # --- agent/cancel -----------------------------------------------------------------------

    def cancel(self, params: CancelParams) -> dict[str, Any]:
        session = self.sessions.get(params.session_id)
        if session is None:
            raise InvalidParams(
                f"Invalid params: sessionId: unknown session {params.session_id!r}",
                {"fields": ["sessionId"]},
            )
        cancelled = session.active.cancel() if session.active else False
        return {"cancelled": cancelled}

    # --- agent/chat -------------------------------------------------------------------------

    def _turn_request(self, params: ChatParams) -> TurnRequest:
        unknown = [n for n in params.enabled_tools or [] if n not in BUILTIN_TOOLS]
        if unknown:
            raise InvalidParams(
                f"Invalid params: enabledTools: unknown tool(s) {', '.join(map(repr, unknown))}; "
                f"built-in tools are {', '.join(BUILTIN_TOOL_NAMES)}",
                {"fields": ["enabledTools"]},
            )
        o = self.options
        policy = GatePolicy(
            confirm_tool_calls=_pick(params.confirm_tool_calls, o.confirm_tool_calls),
            confirm_code_execution=_pick(params.confirm_code_execution, o.confirm_code_execution),
            bypass_permissions=_pick(params.bypass_permissions, o.bypass_permissions),
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
            sandbox=self.sandbox,
        )

    def _scratch_for(self, session: Session) -> Path | None:
        """The session's private tmp: created on first use, removed with the server's root."""
        if self.scratch_root is None:
            return None
        path = self.scratch_root / session.session_id
        path.mkdir(mode=0o700, exist_ok=True)
        return path

    def _check_gate_is_wired(self, request: TurnRequest) -> None:
        if self.client.tool_confirm or self.client.show_message_request:
            return
        names = BUILTIN_TOOL_NAMES if request.enabled_tools is None else request.enabled_tools
        flag = unwireable_flag(
            request.policy,
            tools_enabled=request.tools_enabled,
            enabled_tools=names,
            max_tool_calls=request.max_tool_calls,
        )
        if flag is not None:
            raise InvalidRequest(
                f"{flag} is on, but this client can answer neither toolConfirm nor "
                "window/showMessageRequest, so approvals cannot be asked. Advertise "
                "capabilities.experimental.toolConfirm, or turn off the flag or tools for "
                "this request.",
                {"param": flag},
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
            return self.sessions.create()
        session = self.sessions.get(params.session_id)
        if session is None:
            raise InvalidParams(
                f"Invalid params: sessionId: unknown session {params.session_id!r}",
                {"fields": ["sessionId"]},
            )
        if session.busy:
            raise InvalidRequest(
                f"Session {session.session_id} is still running a turn "
                f"({session.active_turn_id}); wait for it or send agent/cancel first.",
                {"sessionId": session.session_id, "reason": "busy"},
            )
        return session

    async def chat(self, params: ChatParams) -> dict[str, Any]:
        # Every check that can reject the request runs before any model is loaded or run.
        request = self._turn_request(params)
        self._check_gate_is_wired(request)
        others = [s for s in self.sessions.all() if s.session_id != params.session_id]
        self.models.check_switch(params.model, any(s.busy for s in others))
        session = self._session_for(params)
        request = replace(request, scratch_dir=self._scratch_for(session))

        turn_id = session.next_turn_id()
        control = TurnControl()
        task = asyncio.current_task()
        assert task is not None
        control.bind(task)
        session.active, session.active_turn_id = control, turn_id
        stream = TurnStream(self.notify, session.session_id, turn_id)
        asker = ApprovalAsker(
            self.channel,
            self.broker,
            use_tool_confirm=self.client.tool_confirm,
            sandbox=self.sandbox.info,
            timeout_seconds=self.options.confirm_timeout_seconds,
            workspace=str(self.workspace),
        )
        try:
            try:
                backend = await self._load(params.model, stream)
            except asyncio.CancelledError:
                if not control.cancel_requested:
                    raise  # $/cancelRequest for the chat itself: -32800
                task.uncancel()  # agent/cancel while the model loaded: a normal, empty result
                result = TurnResult("cancelled", "", [])
                return self._result(session, turn_id, result)
            loop = AgentLoop(backend, BUILTIN_TOOLS, self.workspace)
            result = await loop.run(
                session.conversation,
                request,
                asker.for_turn(session.session_id, turn_id, stream.flush),
                stream.emit,
                control,
            )
        finally:
            stream.flush()
            session.active, session.active_turn_id = None, None
        return self._result(session, turn_id, result)

    @staticmethod
    def _result(session: Session, turn_id: str, result: TurnResult) -> dict[str, Any]:
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
        ).wire()


def _pick(override: bool | None, default: bool) -> bool:
    return default if override is None else override
