"""The ACP agent: ``initialize``, ``session/new``, ``session/load``, ``session/prompt``,
``session/cancel``, each a thin adapter over :class:`server.service.AgentService`."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, RequestError
from acp.schema import (
    AgentCapabilities,
    Implementation,
    InitializeResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
)

from engine import __version__
from engine.events import StopReason
from server.acp.permissions import AcpPermissions
from server.acp.updates import AcpStream
from server.errors import RpcError, invalid_params_from
from server.options import ServerOptions, parse_options
from server.protocol import ChatParams
from server.service import AgentService

logger = logging.getLogger(__name__)

STOP_REASONS: dict[StopReason, Any] = {
    "end_turn": "end_turn",
    "max_tokens": "max_tokens",
    "tool_limit": "max_turn_requests",
    "cancelled": "cancelled",
}

Configure = Callable[[ServerOptions, Path], Any]
"""Binds the service to its options and workspace (probing the sandbox); may block: it runs in a
thread."""


def _rpc_error(exc: RpcError) -> RequestError:
    data = exc.data.model_dump(by_alias=True, mode="json") if exc.data is not None else None
    return RequestError(exc.code, exc.message, data)


def prompt_text(blocks: list[Any]) -> str:
    """The user's message from a prompt's content blocks: text as it is, embedded resources as
    quoted context, links by their URI. Images and audio are not offered (see initialize)."""
    parts: list[str] = []
    for block in blocks:
        kind = getattr(block, "type", None)
        if kind == "text":
            parts.append(block.text)
        elif kind == "resource":
            resource = block.resource
            text = getattr(resource, "text", None)
            if isinstance(text, str):
                parts.append(f"Context from {resource.uri}:\n```\n{text}\n```")
        elif kind == "resource_link":
            parts.append(f"[{block.name}]({block.uri})")
    return "\n\n".join(parts)


def _overrides(value: Any) -> dict[str, Any]:
    """A prompt's ``_meta.gatehouse``: ``agent/chat``'s per-request params (``enableTools``,
    ``maxToolCalls``, ``confirmToolCalls``, ``temperature``, ...); never its prompt or session."""
    if value is None:
        return {}
    if not isinstance(value, dict) or {"prompt", "sessionId", "session_id"} & set(value):
        raise RequestError.invalid_params(
            {
                "_meta.gatehouse": "must be an object of agent/chat params other than prompt "
                "and sessionId"
            }
        )
    return value


class GatehouseAgent:
    """One ACP connection's agent. Its workspace is ``--workspace`` or the first
    ``session/new``'s ``cwd``; the sandbox is probed for it once."""

    def __init__(
        self,
        service: AgentService,
        configure: Configure,
        *,
        workspace: Path | None,
        flags: dict[str, Any],
    ) -> None:
        self.service = service
        self._configure = configure
        self._fixed_workspace = workspace
        self._flags = flags
        self._options, self._problems = parse_options(flags)
        self._configured: Path | None = None
        self._lock = asyncio.Lock()
        self._conn: Any = None
        self._permissions: AcpPermissions | None = None

    def on_connect(self, conn: Any) -> None:
        self._conn = conn
        self._permissions = AcpPermissions(conn)

    # --- initialize -------------------------------------------------------------------------

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: Any = None,
        client_info: Any = None,
        **meta: Any,
    ) -> InitializeResponse:
        # Options: _meta.gatehouse (the ACP place for initializationOptions), then the flags.
        options, found = parse_options(meta.get("gatehouse"))
        options, from_flags = parse_options(self._flags, options)
        self._options, self._problems = options, found + from_flags
        for problem in self._problems:
            logger.warning("Gatehouse settings: %s", problem)
        name = getattr(client_info, "name", None) or "an ACP client"
        logger.info("initialize from %s (protocol %s)", name, protocol_version)
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(
                load_session=self.service.sessions_persist,
                prompt_capabilities=PromptCapabilities(
                    image=False, audio=False, embedded_context=True
                ),
            ),
            agent_info=Implementation(name="gatehouse", title="Gatehouse", version=__version__),
            auth_methods=[],
        )

    async def authenticate(self, method_id: str, **_meta: Any) -> None:
        return None  # nothing to authenticate: the model runs here

    # --- sessions ---------------------------------------------------------------------------

    async def _workspace_for(self, cwd: str) -> Path:
        if not os.path.isabs(cwd):
            raise RequestError.invalid_params({"cwd": "must be an absolute path"})
        wanted = await asyncio.to_thread(os.path.realpath, cwd)
        async with self._lock:
            if self._configured is None:
                workspace = self._fixed_workspace or Path(wanted)
                if not await asyncio.to_thread(workspace.is_dir):
                    raise RequestError.invalid_params({"cwd": f"not a folder: {workspace}"})
                await asyncio.to_thread(self._configure, self._options, workspace)
                self._configured = workspace
            elif self._fixed_workspace is None and wanted != str(self._configured):
                raise RequestError.invalid_params(
                    {
                        "cwd": f"this Gatehouse process serves {self._configured}; start "
                        f"another one (or pass --workspace) for {wanted}"
                    }
                )
            return self._configured

    async def new_session(self, cwd: str, mcp_servers: Any = None, **_: Any) -> NewSessionResponse:
        await self._workspace_for(cwd)
        session = self.service.new_session()
        logger.info("session/new %s in %s", session.session_id, self._configured)
        return NewSessionResponse(session_id=session.session_id)

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: Any = None, **_: Any
    ) -> LoadSessionResponse:
        await self._workspace_for(cwd)
        try:
            session = await self.service.restore_session(session_id)
        except RpcError as exc:  # unknown, open in another server, or no data folder
            raise _rpc_error(exc) from exc
        stream = AcpStream(self._conn.session_update, session.session_id)
        try:
            stream.replay(session.conversation.messages)
        finally:
            await stream.close()
        return LoadSessionResponse()

    # --- prompt and cancel ------------------------------------------------------------------

    async def prompt(self, prompt: list[Any], session_id: str, **meta: Any) -> PromptResponse:
        session = self.service.sessions.get(session_id)
        if session is None:
            raise RequestError.invalid_params({"sessionId": f"unknown session {session_id}"})
        if session.busy:
            raise RequestError.invalid_request(
                {"sessionId": session_id, "reason": "busy: a prompt is still running"}
            )
        try:
            params = ChatParams.model_validate(
                {**_overrides(meta.get("gatehouse")), "prompt": prompt_text(prompt)}
                | {"sessionId": session_id}
            )
            request = self.service.check_turn(params)
        except RpcError as exc:
            raise _rpc_error(exc) from None
        except ValueError as exc:  # pydantic: a blank prompt
            raise _rpc_error(invalid_params_from(exc)) from None  # type: ignore[arg-type]
        permissions = self._permissions
        assert permissions is not None
        settings = self.service.prompt_settings("acp")
        streams: list[AcpStream] = []

        def make_stream(_turn_id: str) -> AcpStream:
            stream = AcpStream(self._conn.session_update, session_id)
            streams.append(stream)
            return stream

        # The turn runs in a task of its own: each model token resumes only the turn's frames,
        # not also the SDK's request chain (router, connection) above this one (~4 % CPU per
        # token). Cancelling this request (the client went away) cancels that task too.
        turn = asyncio.ensure_future(
            self.service.run_turn(
                session,
                request,
                params.model,
                make_stream,
                lambda _turn_id, stream: permissions.for_turn(
                    session_id,
                    settings,
                    stream,  # type: ignore[arg-type]
                ),
            )
        )
        try:
            _turn_id, result = await turn
        except RpcError as exc:
            raise _rpc_error(exc) from None
        finally:
            for stream in streams:
                await stream.close()  # every update precedes the response
        return PromptResponse(stop_reason=STOP_REASONS[result.stop_reason])

    async def cancel(self, session_id: str, **_: Any) -> None:
        session = self.service.sessions.get(session_id)
        if session is not None and session.active is not None:
            logger.info("session/cancel %s", session_id)
            session.active.cancel()
