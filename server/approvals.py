"""Approvals: asking the editor whether a tool call may run, and waiting for the answer.

One class, :class:`Approvals`, owns every approval that is waiting for a person. An approval is
registered *before* the editor is asked (an answer can never arrive for an approval the server does
not know); its JSON-RPC request id and its ``approvalId`` are unguessable (192 random bits), so only
a reply to that very request can decide it; it is decided at most once (the first decision wins).

The editor is asked with ``toolConfirm`` (clients that advertise it) or the plain LSP
``window/showMessageRequest`` (Deny first, so a default pick or a stray Enter never approves).
Both offer the request's choices (allow once, allow the proposed rule for the session, always
allow it in this workspace); an answer is bound to its approval and, when it echoes it, to the
SHA-256 of the content it approves.

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
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, Literal, Protocol

from lsprotocol import types as lsp
from pydantic import ValidationError

from engine.approvals import ApprovalOutcome, ApprovalRequest, Approver, ClientDecision, Decider
from engine.rules.decision import Choice, choices_for
from engine.tools.diffs import diff_counts
from sandbox.info import SandboxInfo
from server.protocol import (
    TOOL_CONFIRM,
    ProposedEdit,
    SandboxState,
    ToolConfirmParams,
    ToolConfirmResult,
    UserEdit,
)
from server.protocol.display import hidden_warning, visible
from server.rules import choice_view
from server.transport import ClientCancelled

logger = logging.getLogger(__name__)

PromptStyle = Literal["toolConfirm", "showMessageRequest", "acp", "none"]
"""How approvals are asked: ``acp`` is ``session/request_permission`` (:mod:`server.acp`);
``none`` when the client advertises no way (every ask then fails closed at once, e.g. an edit of
an auto-run path with ``confirmFileEdits`` off)."""

DENY = "Deny"
BASE_DECISION: dict[str, ClientDecision] = {
    "deny": "deny",
    "allow_once": "allow",
    "allow_always": "allow",
    "allow_session": "allow_session",
}
"""The decision each kind of choice is answered with (a server that ignored the choice would
then do the least: allow once, or the session grant it offered)."""

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


def offered_choices(request: ApprovalRequest) -> tuple[Choice, ...]:
    """The request's choices (Deny and Allow once when it names none)."""
    return request.choices or choices_for(None, False)


def _choose(
    request: ApprovalRequest, decision: ClientDecision, choice_id: str | None
) -> ApprovalOutcome | Choice:
    """The choice an answer makes, or the failed outcome when it makes none that was offered."""
    if choice_id is not None:
        choice = next((c for c in offered_choices(request) if c.id == choice_id), None)
        if choice is None:
            return ApprovalOutcome(
                "failed", f"the editor chose {choice_id!r}, which was not offered"
            )
        if BASE_DECISION[choice.kind] != decision:
            return ApprovalOutcome(
                "failed",
                f"the editor's decision {decision!r} disagrees with its choice {choice_id!r}",
            )
        return choice
    kind = {"deny": "deny", "allow": "allow_once", "allow_session": "allow_session"}[decision]
    choices = offered_choices(request)
    found = next((c for c in choices if c.kind == kind), None)
    if found is None:  # allow_session without a rule to grant: allow this call only
        found = next(c for c in choices if c.kind == "allow_once")
    return found


def _outcome(
    choice: Choice | ApprovalOutcome, message: str | None, via: Decider
) -> ApprovalOutcome:
    """The outcome of a person's answer through ``via`` (a failed one as it is)."""
    if isinstance(choice, ApprovalOutcome):
        return choice
    if choice.kind == "deny":
        return ApprovalOutcome("deny", message, choice, via=via)
    return ApprovalOutcome(BASE_DECISION[choice.kind], None, choice, via=via)


def _parse_tool_confirm(
    reply: Any, pending: PendingApproval, request: ApprovalRequest
) -> ApprovalOutcome:
    try:
        answer = ToolConfirmResult.model_validate(reply)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "result"
        return ApprovalOutcome(
            "failed", f"the editor's answer was malformed ({where}: {first['msg']})"
        )
    if answer.approval_id is not None and answer.approval_id != pending.approval_id:
        return ApprovalOutcome("failed", "the editor's answer named another approval")
    if answer.content_sha256 is not None and answer.content_sha256 != request.content_sha256:
        return ApprovalOutcome("failed", "the editor's answer was for other content")
    choice = _choose(request, answer.decision, answer.choice)
    outcome = _outcome(choice, answer.message, "toolConfirm")
    if not outcome.allows or not answer.edits:
        return outcome
    return _with_versions(outcome, request, answer.edits)


def _with_versions(
    outcome: ApprovalOutcome, request: ApprovalRequest, edits: list[UserEdit]
) -> ApprovalOutcome:
    """An allow of an edit with the user's own version of some files; ``failed`` when one is
    not a file the call creates or changes, or appears twice."""
    writable = {e.path for e in request.edits if e.action != "delete"}
    versions: dict[str, str] = {}
    for edit in edits:
        if edit.path not in writable or edit.path in versions:
            return ApprovalOutcome(
                "failed",
                f"the editor's answer was malformed (edits: {edit.path!r} is not a file this "
                "call creates or changes, or appears twice)",
            )
        versions[edit.path] = edit.content
    return replace(outcome, edits=versions)


def _parse_message_action(
    reply: Any, _pending: PendingApproval, request: ApprovalRequest, *, offered: list[str]
) -> ApprovalOutcome:
    if reply is None:
        # dismissed: no answer means deny
        return _outcome(_choose(request, "deny", None), None, "showMessageRequest")
    title = getattr(reply, "title", None)
    if title is None and isinstance(reply, dict):
        title = reply.get("title")
    for choice in offered_choices(request):
        if action_title(choice) == title and title in offered:
            return _outcome(choice, None, "showMessageRequest")
    return ApprovalOutcome("failed", f"the editor answered with an unknown action {title!r}")


def action_title(choice: Choice) -> str:
    """A ``window/showMessageRequest`` action: the choice's label, hidden characters shown."""
    return visible(choice.label)


def shown_code(request: ApprovalRequest) -> str:
    """What a person reviews: the diff of an edit, the code or command itself, else the
    arguments as JSON."""
    if request.edits:
        return "".join(edit.diff for edit in request.edits)
    for key in ("code", "command"):
        value = request.arguments.get(key)
        if isinstance(value, str) and set(request.arguments) == {key}:
            return value
    return json.dumps(request.arguments, ensure_ascii=False, indent=2)


def diff_stat(request: ApprovalRequest) -> list[str]:
    """One line per file of an edit: path, lines added and removed, action (and protection)."""
    lines = []
    for edit in request.edits:
        added, removed = diff_counts(edit.diff)
        line = f"{visible(edit.path)} | +{added} -{removed} ({edit.action})"
        if edit.protected is not None:
            line += f" PROTECTED: {visible(edit.protected)}; asked even after Allow for session"
        lines.append(line)
    return lines


def approval_head(request: ApprovalRequest, settings: PromptSettings) -> str:
    """The first sentence of every approval prompt: the files an edit changes (with its diff
    stat), or the tool, the folder, isolation and network."""
    where = visible(settings.workspace)
    if request.edits:
        count = len(request.edits)
        files = "a file" if count == 1 else f"{count} files"
        return (
            f"Gatehouse wants to change {files} in {where} with the {visible(request.name)} "
            "tool:\n" + "\n".join(diff_stat(request))
        )
    network = "on" if settings.sandbox.network else "off"
    return (
        f"Gatehouse wants to run the {visible(request.name)} tool in {where} "
        f"(isolation: {settings.sandbox.level}, network: {network})."
    )


def message_request(
    request: ApprovalRequest, settings: PromptSettings
) -> lsp.ShowMessageRequestParams:
    """The ``window/showMessageRequest`` fallback prompt: everything shown, Deny first."""
    code = shown_code(request)
    lines = visible(code).split("\n")
    complete = len(lines) <= FALLBACK_MAX_LINES and len(code) <= FALLBACK_MAX_CHARS
    parts = [approval_head(request, settings)]
    warning = hidden_warning(code)
    if warning:
        parts.append(warning)
    if request.unclear:
        parts.append("Rules cannot allow this command: it " + "; it ".join(request.unclear) + ".")
    if complete:
        parts.append("\n".join(lines))
        actions = [action_title(c) for c in offered_choices(request)]
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
        if settings.style == "none":  # never send a request the client said it cannot answer
            return ApprovalOutcome(
                "failed",
                "this editor cannot show an approval prompt (it advertises neither toolConfirm "
                "nor window/showMessageRequest)",
            )
        pending = self._register(session_id, request.tool_call_id)
        params: Any
        parse: Callable[[Any, PendingApproval, ApprovalRequest], ApprovalOutcome]
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
                content_sha256=request.content_sha256,
                choices=[choice_view(c) for c in offered_choices(request)],
                unclear=list(request.unclear) or None,
                edits=[
                    ProposedEdit(path=e.path, action=e.action, diff=e.diff, protected=e.protected)
                    for e in request.edits
                ]
                or None,
            ).wire()
            parse = _parse_tool_confirm
        else:
            method = lsp.WINDOW_SHOW_MESSAGE_REQUEST
            params = message_request(request, settings)
            offered = [action.title for action in params.actions or []]
            parse = partial(_parse_message_action, offered=offered)
        return await self._send_and_wait(
            pending,
            method,
            params,
            lambda reply, p: parse(reply, p, request),
            settings.timeout_seconds,
        )

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
                    "failed", "the editor cancelled the approval request without an answer"
                )
            elif error is not None:
                outcome = ApprovalOutcome(
                    "failed", f"the editor answered the approval request with an error ({error})"
                )
            else:
                outcome = parse(reply.result(), pending)
            self._decide(pending, outcome)

        try:
            reply = self._channel.send_request(method, params, msg_id=pending.msg_id)
        except Exception as exc:  # a broken pipe: nobody can be asked
            self._discard(pending)
            logger.warning("could not send the approval request: %s", exc)
            return ApprovalOutcome("failed", "the editor could not be asked (connection lost)")
        loop = asyncio.get_running_loop()
        reply.add_done_callback(lambda f: loop.call_soon_threadsafe(on_reply, f))
        try:
            return await asyncio.wait_for(asyncio.shield(pending.future), timeout_seconds)
        except TimeoutError:
            self._decide(pending, ApprovalOutcome("timed_out", f"{timeout_seconds:g} seconds"))
            return pending.future.result()
        finally:
            self._discard(pending)
            if not reply.done():
                self._channel.withdraw_request(pending.msg_id)

    def pending_for(self, session_id: str) -> list[PendingApproval]:
        return [p for p in self._pending.values() if p.session_id == session_id]

    def __len__(self) -> int:
        return len(self._pending)
