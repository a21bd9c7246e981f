"""Gated tool calls -> ``session/request_permission``; its answer -> an approval outcome.

The options are offered Deny first (a client that pre-selects the first option, or a stray
Enter, never approves):

- ``deny`` (``reject_once``): ``deny``;
- ``allow`` (``allow_once``): ``allow``;
- ``allow_session`` (``allow_always``): ``allow_session`` (this tool, this session);
- ``deny_session`` (``reject_always``): ``deny``, and later calls of this tool in this session
  are denied without asking.

Fail closed: a ``cancelled`` outcome, an unknown option, an error reply, a malformed reply, a
lost connection or no answer within ``confirmTimeoutSeconds`` never runs the call. The request's
text (title and content) names the tool, the folder, the isolation level and the network state,
and shows all of the code, display-safe.

When allow/deny rules exist (issue 12), ``allow_always``/``reject_always`` are where they plug
in: :meth:`AcpPermissions.remember` is the one place an "always" answer is recorded.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from acp import text_block, tool_content
from acp.schema import PermissionOption, RequestPermissionResponse, ToolCallUpdate
from pydantic import ValidationError

from engine.approvals import ApprovalOutcome, ApprovalRequest, Approver, ClientDecision
from server.acp.updates import AcpStream, code_block, tool_kind
from server.approvals import PromptSettings, approval_head, shown_code
from server.protocol.display import hidden_warning, visible

logger = logging.getLogger(__name__)

OPTIONS: tuple[tuple[str, str, Any, ClientDecision], ...] = (
    ("deny", "Deny", "reject_once", "deny"),
    ("allow", "Allow once", "allow_once", "allow"),
    ("allow_session", "Allow {tool} for this session", "allow_always", "allow_session"),
    ("deny_session", "Deny {tool} for this session", "reject_always", "deny"),
)
"""(option id, label, ACP kind, decision), in the order they are offered: Deny first."""


def permission_options(tool: str) -> list[PermissionOption]:
    name = visible(tool)
    return [
        PermissionOption(option_id=option_id, name=label.format(tool=name), kind=kind)
        for option_id, label, kind, _decision in OPTIONS
    ]


def permission_text(request: ApprovalRequest, settings: PromptSettings) -> str:
    code = shown_code(request)
    parts = [approval_head(request, settings)]
    warning = hidden_warning(code)
    if warning:
        parts.append(warning)
    parts.append(code_block(code))
    return "\n\n".join(parts)


def permission_title(request: ApprovalRequest, settings: PromptSettings) -> str:
    network = "on" if settings.sandbox.network else "off"
    return f"Run {visible(request.name)}? (isolation: {settings.sandbox.level}, network: {network})"


def parse_outcome(reply: Any) -> tuple[ApprovalOutcome, str | None]:
    """The outcome of a reply, and the option id chosen (None when none was)."""
    try:
        answer = (
            reply
            if isinstance(reply, RequestPermissionResponse)
            else RequestPermissionResponse.model_validate(reply)
        )
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "result"
        return ApprovalOutcome(
            "failed", f"the client's answer was malformed ({where}: {first['msg']})"
        ), None
    outcome = answer.outcome
    if outcome.outcome == "cancelled":
        return ApprovalOutcome("cancelled", "the client cancelled the permission request"), None
    option_id = getattr(outcome, "option_id", None)
    for known, _label, _kind, decision in OPTIONS:
        if option_id == known:
            return ApprovalOutcome(decision), option_id
    return ApprovalOutcome("failed", f"the client chose an unknown option {option_id!r}"), None


class AcpPermissions:
    """Asks the client through ``session/request_permission``; remembers "always" answers."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn
        self._denied: dict[str, set[str]] = {}
        """Tools denied for the rest of a session (``reject_always``), by session id."""

    def remember(self, session_id: str, tool: str, option_id: str | None) -> None:
        """Record an "always" answer (``allow_always`` is the conversation's allow_session)."""
        if option_id == "deny_session":
            self._denied.setdefault(session_id, set()).add(tool)

    def forget(self, session_id: str) -> None:
        self._denied.pop(session_id, None)

    def for_turn(self, session_id: str, settings: PromptSettings, stream: AcpStream) -> Approver:
        async def approve(request: ApprovalRequest) -> ApprovalOutcome:
            if request.name in self._denied.get(session_id, ()):
                return ApprovalOutcome("deny", f"{request.name} was denied for this session")
            await stream.drain()  # the tool_call (pending) is on the wire before we ask
            outcome = await self.ask(session_id, request, settings)
            if outcome.allows:
                stream.mark_running(request.tool_call_id)
            return outcome

        return approve

    async def ask(
        self, session_id: str, request: ApprovalRequest, settings: PromptSettings
    ) -> ApprovalOutcome:
        tool_call = ToolCallUpdate(
            tool_call_id=request.tool_call_id,
            title=permission_title(request, settings),
            kind=tool_kind(request.name),
            status="pending",
            content=[tool_content(text_block(permission_text(request, settings)))],
            raw_input=request.arguments,
        )
        asked = self._conn.request_permission(
            session_id=session_id,
            tool_call=tool_call,
            options=permission_options(request.name),
        )
        try:
            reply = await asyncio.wait_for(asked, settings.timeout_seconds)
        except TimeoutError:
            return ApprovalOutcome("timed_out", f"{settings.timeout_seconds:g} seconds")
        except asyncio.CancelledError:
            raise
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "result"
            return ApprovalOutcome(
                "failed", f"the client's answer was malformed ({where}: {first['msg']})"
            )
        except ConnectionError:
            return ApprovalOutcome("failed", "the client could not be asked (connection lost)")
        except Exception as exc:  # an error reply: fail closed
            logger.info("session/request_permission failed: %s", exc)
            return ApprovalOutcome(
                "failed", f"the client answered the permission request with an error ({exc})"
            )
        outcome, option_id = parse_outcome(reply)
        self.remember(session_id, request.name, option_id)
        return outcome
