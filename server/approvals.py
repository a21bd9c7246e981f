"""Asking the editor for approval: ``toolConfirm``, or ``window/showMessageRequest`` as a fallback.

Fail closed: an error reply, a malformed reply, an unknown decision, no reply in time, a cancel or
a disconnect never yields ``allow``. A request that is no longer needed (cancel, timeout) is
withdrawn at the client with ``$/cancelRequest``.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, Protocol

from lsprotocol import types as lsp
from pydantic import ValidationError

from engine.gate import CODE_EXECUTION_TOOL_NAMES
from engine.loop import ApprovalOutcome, ApprovalRequest, Approver, Decision
from sandbox.info import SandboxInfo
from server.broker import ApprovalBroker, PendingApproval
from server.protocol import TOOL_CONFIRM, SandboxWire, ToolConfirmParams, ToolConfirmResult

logger = logging.getLogger(__name__)

ALLOW, ALLOW_SESSION, DENY = "Allow", "Allow for session", "Deny"
_PREVIEW_LINES = 12


class ClientChannel(Protocol):
    """What the approval flow needs from the connection to the editor."""

    def send_request(self, method: str, params: Any = None, *, msg_id: str) -> Future[Any]: ...

    def withdraw_request(self, msg_id: str) -> None: ...


_ids = itertools.count(1)
_ACTIONS: dict[str, Decision] = {ALLOW: "allow", ALLOW_SESSION: "allow_session", DENY: "deny"}


def _parse_tool_confirm(reply: Any) -> ApprovalOutcome:
    try:
        answer = ToolConfirmResult.model_validate(reply)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "result"
        return ApprovalOutcome(
            "failed", f"the editor's answer was malformed ({where}: {first['msg']})"
        )
    return ApprovalOutcome(answer.decision, answer.message)


def _parse_message_action(reply: Any) -> ApprovalOutcome:
    if reply is None:
        return ApprovalOutcome("deny", None)  # the prompt was dismissed: no answer means deny
    title = getattr(reply, "title", None)
    if title is None and isinstance(reply, dict):
        title = reply.get("title")
    decision = _ACTIONS.get(str(title))
    if decision is None:
        return ApprovalOutcome("failed", f"the editor answered with an unknown action {title!r}")
    return ApprovalOutcome(decision)


def preview(name: str, arguments: dict[str, Any]) -> str:
    """The code or command a person is asked about, shortened to a readable prompt."""
    if name in CODE_EXECUTION_TOOL_NAMES:
        text = str(arguments.get("code", arguments.get("command", "")))
    else:
        text = json.dumps(arguments, ensure_ascii=False)
    lines = text.splitlines() or [""]
    if len(lines) > _PREVIEW_LINES:
        hidden = len(lines) - _PREVIEW_LINES
        lines = [*lines[:_PREVIEW_LINES], f"... ({hidden} more lines)"]
    return "\n".join(lines)


class ApprovalAsker:
    """Builds the approval callback for one turn."""

    def __init__(
        self,
        channel: ClientChannel,
        broker: ApprovalBroker,
        *,
        use_tool_confirm: bool,
        sandbox: SandboxInfo,
        timeout_seconds: float,
        workspace: str,
    ) -> None:
        self._channel = channel
        self._broker = broker
        self._use_tool_confirm = use_tool_confirm
        self._sandbox = sandbox
        self._timeout = timeout_seconds
        self._workspace = workspace

    def for_turn(self, session_id: str, turn_id: str, before_ask: Callable[[], None]) -> Approver:
        async def approve(request: ApprovalRequest) -> ApprovalOutcome:
            before_ask()  # tool_start (awaitingConfirmation) is on the wire before we ask
            pending = self._broker.register(session_id, request.tool_call_id)
            if self._use_tool_confirm:
                method: str = TOOL_CONFIRM
                params: Any = ToolConfirmParams(
                    session_id=session_id,
                    turn_id=turn_id,
                    tool_call_id=request.tool_call_id,
                    approval_id=pending.approval_id,
                    name=request.name,
                    arguments=request.arguments,
                    reason=request.reason,
                    sandbox=SandboxWire(level=self._sandbox.level, network=self._sandbox.network),
                ).wire()
                parse = _parse_tool_confirm
            else:
                method = lsp.WINDOW_SHOW_MESSAGE_REQUEST
                params = self._message_request(request)
                parse = _parse_message_action
            return await self._ask(pending, method, params, parse)

        return approve

    def _message_request(self, request: ApprovalRequest) -> lsp.ShowMessageRequestParams:
        network = "on" if self._sandbox.network else "off"
        message = (
            f"Gatehouse wants to run the {request.name} tool in {self._workspace} "
            f"(isolation: {self._sandbox.level}, network: {network}):\n\n"
            f"{preview(request.name, request.arguments)}"
        )
        return lsp.ShowMessageRequestParams(
            type=lsp.MessageType.Warning,
            message=message,
            actions=[lsp.MessageActionItem(t) for t in (ALLOW, ALLOW_SESSION, DENY)],
        )

    async def _ask(
        self,
        pending: PendingApproval,
        method: str,
        params: Any,
        parse: Callable[[Any], ApprovalOutcome],
    ) -> ApprovalOutcome:
        msg_id = f"gatehouse-approval-{next(_ids)}"

        def on_reply(reply: Future[Any]) -> None:
            if reply.cancelled():
                return
            error = reply.exception()
            if error is not None:
                outcome = ApprovalOutcome(
                    "failed", f"the editor answered the approval request with an error ({error})"
                )
            else:
                outcome = parse(reply.result())
            self._broker.resolve(pending.approval_id, pending.session_id, outcome)

        try:
            reply = self._channel.send_request(method, params, msg_id=msg_id)
        except Exception as exc:  # a broken pipe: nobody can be asked
            self._broker.discard(pending)
            logger.warning("could not send the approval request: %s", exc)
            return ApprovalOutcome("failed", "the editor could not be asked (connection lost)")
        loop = asyncio.get_running_loop()
        reply.add_done_callback(lambda f: loop.call_soon_threadsafe(on_reply, f))
        try:
            return await self._broker.wait(pending, self._timeout)
        finally:
            if not reply.done():
                self._channel.withdraw_request(msg_id)
