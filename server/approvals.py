"""Approvals: asking the editor whether a tool call may run, and waiting for the answer.

One class, :class:`Approvals`, owns every approval that is waiting for a person. An approval is
registered *before* the editor is asked (an answer can never arrive for an approval the server does
not know); its JSON-RPC request id and its ``approvalId`` are unguessable (192 random bits), so only
a reply to that very request can decide it; it is decided at most once (the first decision wins).

The editor is asked with ``toolConfirm`` (clients that advertise it) or the plain LSP
``window/showMessageRequest`` (Deny first, so a default pick or a stray Enter never approves).

Fail closed: an error reply, a malformed reply, an unknown decision, a reply naming another
approval, no reply in time, the editor cancelling the request, a cancel or a disconnect never
yields ``allow``. A request that is no longer needed (cancel, timeout) is withdrawn at the client
with ``$/cancelRequest``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from lsprotocol import types as lsp
from pydantic import ValidationError

from engine.approvals import ApprovalOutcome, ApprovalRequest, Approver, ClientDecision
from sandbox.info import SandboxInfo
from server.protocol import TOOL_CONFIRM, SandboxState, ToolConfirmParams, ToolConfirmResult
from server.protocol.display import hidden_warning, visible
from server.transport import ClientCancelled

logger = logging.getLogger(__name__)

PromptStyle = Literal["toolConfirm", "showMessageRequest"]

DENY, ALLOW, ALLOW_SESSION = "Deny", "Allow", "Allow for session"
ACTIONS: dict[str, ClientDecision] = {DENY: "deny", ALLOW: "allow", ALLOW_SESSION: "allow_session"}
"""The ``window/showMessageRequest`` actions, Deny first, and what each decides."""

FALLBACK_MAX_LINES = 200
FALLBACK_MAX_CHARS = 8000
"""What a ``window/showMessageRequest`` prompt shows in full. Longer code cannot be reviewed
there, so it can only be denied (a person must see all of what they approve)."""


class ClientChannel(Protocol):
    """What the approval flow needs from the connection to the editor."""

    def send_request(self, method: str, params: Any = None, *, msg_id: str) -> Future[Any]: ...

    def withdraw_request(self, msg_id: str) -> None: ...


@dataclass
class PendingApproval:
    approval_id: str
    session_id: str
    tool_call_id: str
    future: asyncio.Future[ApprovalOutcome] = field(repr=False)

    @property
    def msg_id(self) -> str:
        """The JSON-RPC id of the request that asks for it: as unguessable as the approval."""
        return f"gatehouse-approval-{self.approval_id}"


@dataclass(frozen=True)
class PromptSettings:
    """How the approvals of one turn are asked."""

    style: PromptStyle
    sandbox: SandboxInfo
    workspace: str
    timeout_seconds: float


def _parse_tool_confirm(reply: Any, pending: PendingApproval) -> ApprovalOutcome:
    try:
        answer = ToolConfirmResult.model_validate(reply)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "result"
        return ApprovalOutcome(
            "failed", f"the editor's answer was malformed ({where}: {first['msg']})", "error"
        )
    if answer.approval_id is not None and answer.approval_id != pending.approval_id:
        return ApprovalOutcome("failed", "the editor's answer named another approval", "error")
    return ApprovalOutcome(answer.decision, answer.message, "toolConfirm")


def _parse_message_action(reply: Any, _pending: PendingApproval) -> ApprovalOutcome:
    if reply is None:
        # the prompt was dismissed: no answer means deny
        return ApprovalOutcome("deny", None, "showMessageRequest")
    title = getattr(reply, "title", None)
    if title is None and isinstance(reply, dict):
        title = reply.get("title")
    decision = ACTIONS.get(str(title))
    if decision is None:
        return ApprovalOutcome(
            "failed", f"the editor answered with an unknown action {title!r}", "error"
        )
    return ApprovalOutcome(decision, None, "showMessageRequest")


def shown_code(request: ApprovalRequest) -> str:
    """What a person reviews: the code or command itself, else the arguments as JSON."""
    for key in ("code", "command"):
        value = request.arguments.get(key)
        if isinstance(value, str) and set(request.arguments) == {key}:
            return value
    return json.dumps(request.arguments, ensure_ascii=False, indent=2)


def message_request(
    request: ApprovalRequest, settings: PromptSettings
) -> lsp.ShowMessageRequestParams:
    """The ``window/showMessageRequest`` fallback prompt: everything shown, Deny first."""
    network = "on" if settings.sandbox.network else "off"
    code = shown_code(request)
    lines = visible(code).split("\n")
    complete = len(lines) <= FALLBACK_MAX_LINES and len(code) <= FALLBACK_MAX_CHARS
    head = (
        f"Gatehouse wants to run the {visible(request.name)} tool in {visible(settings.workspace)} "
        f"(isolation: {settings.sandbox.level}, network: {network})."
    )
    parts = [head]
    warning = hidden_warning(code)
    if warning:
        parts.append(warning)
    if complete:
        parts.append("\n".join(lines))
        actions = [DENY, ALLOW, ALLOW_SESSION]
    else:
        shown = "\n".join(lines[:FALLBACK_MAX_LINES])[:FALLBACK_MAX_CHARS]
        parts.append(shown)
        parts.append(
            f"[It is too long to show here ({len(lines)} lines, {len(code)} characters), so it "
            "can only be denied. An editor with the Gatehouse plug-in shows all of it.]"
        )
        actions = [DENY]
    return lsp.ShowMessageRequestParams(
        type=lsp.MessageType.Warning,
        message="\n\n".join(parts),
        actions=[lsp.MessageActionItem(title) for title in actions],
    )


class Approvals:
    """Every approval waiting for a person, and the one way to ask for one."""

    def __init__(self, channel: ClientChannel) -> None:
        self._channel = channel
        self._pending: dict[str, PendingApproval] = {}

    def for_turn(
        self,
        session_id: str,
        turn_id: str,
        settings: PromptSettings,
        before_ask: Callable[[], None],
    ) -> Approver:
        """The approval callback the loop awaits for the gated calls of one turn."""

        async def approve(request: ApprovalRequest) -> ApprovalOutcome:
            before_ask()  # tool_start (awaitingConfirmation) is on the wire before we ask
            return await self.ask(session_id, turn_id, request, settings)

        return approve

    async def ask(
        self, session_id: str, turn_id: str, request: ApprovalRequest, settings: PromptSettings
    ) -> ApprovalOutcome:
        pending = self._register(session_id, request.tool_call_id)
        params: Any
        parse: Callable[[Any, PendingApproval], ApprovalOutcome]
        if settings.style == "toolConfirm":
            method = TOOL_CONFIRM
            params = ToolConfirmParams(
                session_id=session_id,
                turn_id=turn_id,
                tool_call_id=request.tool_call_id,
                approval_id=pending.approval_id,
                name=request.name,
                arguments=request.arguments,
                reason=request.reason,
                sandbox=SandboxState(
                    level=settings.sandbox.level, network=settings.sandbox.network
                ),
            ).wire()
            parse = _parse_tool_confirm
        else:
            method = lsp.WINDOW_SHOW_MESSAGE_REQUEST
            params = message_request(request, settings)
            parse = _parse_message_action
        return await self._send_and_wait(pending, method, params, parse, settings.timeout_seconds)

    def _register(self, session_id: str, tool_call_id: str) -> PendingApproval:
        approval_id = secrets.token_urlsafe(24)  # 192 bits
        future: asyncio.Future[ApprovalOutcome] = asyncio.get_running_loop().create_future()
        pending = PendingApproval(approval_id, session_id, tool_call_id, future)
        self._pending[approval_id] = pending
        return pending

    def _decide(self, pending: PendingApproval, outcome: ApprovalOutcome) -> bool:
        """The first decision wins; False (and nothing changes) when it is no longer pending."""
        if pending.future.done() or self._pending.get(pending.approval_id) is not pending:
            logger.info("ignored a decision for approval %s: no longer pending", pending.msg_id)
            return False
        pending.future.set_result(outcome)
        return True

    def _discard(self, pending: PendingApproval) -> None:
        if not pending.future.done():
            pending.future.cancel()
        self._pending.pop(pending.approval_id, None)

    async def _send_and_wait(
        self,
        pending: PendingApproval,
        method: str,
        params: Any,
        parse: Callable[[Any, PendingApproval], ApprovalOutcome],
        timeout_seconds: float,
    ) -> ApprovalOutcome:
        def on_reply(reply: Future[Any]) -> None:
            if reply.cancelled():
                return  # we withdrew it: the outcome is already decided
            error = reply.exception()
            if isinstance(error, ClientCancelled):
                outcome = ApprovalOutcome(
                    "failed", "the editor cancelled the approval request without an answer", "error"
                )
            elif error is not None:
                outcome = ApprovalOutcome(
                    "failed",
                    f"the editor answered the approval request with an error ({error})",
                    "error",
                )
            else:
                outcome = parse(reply.result(), pending)
            self._decide(pending, outcome)

        try:
            reply = self._channel.send_request(method, params, msg_id=pending.msg_id)
        except Exception as exc:  # a broken pipe: nobody can be asked
            self._discard(pending)
            logger.warning("could not send the approval request: %s", exc)
            return ApprovalOutcome(
                "failed", "the editor could not be asked (connection lost)", "error"
            )
        loop = asyncio.get_running_loop()
        reply.add_done_callback(lambda f: loop.call_soon_threadsafe(on_reply, f))
        try:
            return await asyncio.wait_for(asyncio.shield(pending.future), timeout_seconds)
        except TimeoutError:
            self._decide(
                pending, ApprovalOutcome("timed_out", f"{timeout_seconds:g} seconds", "timeout")
            )
            return pending.future.result()
        finally:
            self._discard(pending)
            if not reply.done():
                self._channel.withdraw_request(pending.msg_id)

    def pending_for(self, session_id: str) -> list[PendingApproval]:
        return [p for p in self._pending.values() if p.session_id == session_id]

    def __len__(self) -> int:
        return len(self._pending)
