"""Gated tool calls -> ``session/request_permission``; its answer -> an approval outcome.

The options are the request's choices (:func:`engine.rules.decision.choices_for`: Deny first, so
a client that pre-selects the first option, or a stray Enter, never approves), each with its ACP
kind, and one more of Gatehouse's own at the end:

- ``deny`` (``reject_once``): deny;
- ``allow_once`` (``allow_once``): allow this call;
- ``allow_session`` (``allow_always``): allow, and grant the choice's rule for this session;
- ``allow_always`` (``allow_always``): allow, and write the choice's rule as a user rule for
  this workspace (issue 12's rules; the loop records it, as for ``toolConfirm``);
- ``deny_session`` (``reject_always``): deny, and later calls of this tool in this session are
  denied without asking.

Fail closed: a ``cancelled`` outcome, an option that was not offered, an error reply, a malformed
reply, a lost connection or no answer within ``confirmTimeoutSeconds`` never runs the call. The
request's text (title and content) names the tool, the folder, the isolation level and the
network state, and shows all of the code, display-safe.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

from acp import text_block, tool_content, tool_diff_content
from acp.schema import PermissionOption, RequestPermissionResponse, ToolCallUpdate
from pydantic import ValidationError

from engine.approvals import ApprovalOutcome, ApprovalRequest, Approver
from server.acp.updates import AcpStream, code_block, tool_kind
from server.approvals import (
    BASE_DECISION,
    PromptSettings,
    approval_head,
    offered_choices,
    shown_code,
)
from server.protocol.display import hidden_warning, visible

logger = logging.getLogger(__name__)

ACP_KINDS: dict[str, Any] = {
    "deny": "reject_once",
    "allow_once": "allow_once",
    "allow_session": "allow_always",
    "allow_always": "allow_always",
}
"""The ACP kind of each kind of Gatehouse choice."""

DENY_SESSION = "deny_session"
"""Gatehouse's ``reject_always`` option: deny this tool for the rest of the session."""


def permission_options(request: ApprovalRequest) -> list[PermissionOption]:
    options = [
        PermissionOption(option_id=c.id, name=visible(c.label), kind=ACP_KINDS[c.kind])
        for c in offered_choices(request)
    ]
    options.append(
        PermissionOption(
            option_id=DENY_SESSION,
            name=f"Deny {visible(request.name)} for this session",
            kind="reject_always",
        )
    )
    return options


def permission_text(request: ApprovalRequest, settings: PromptSettings) -> str:
    code = shown_code(request)
    parts = [approval_head(request, settings)]
    warning = hidden_warning(code)
    if warning:
        parts.append(warning)
    if request.unclear:
        parts.append("Rules cannot allow this command: it " + "; it ".join(request.unclear) + ".")
    parts.append(code_block(code))
    return "\n\n".join(parts)


def permission_title(request: ApprovalRequest, settings: PromptSettings) -> str:
    if request.edits:
        what = visible(request.edits[0].path) if len(request.edits) == 1 else "files"
        return f"Change {what} with {visible(request.name)}? ({len(request.edits)} file(s))"
    network = "on" if settings.sandbox.network else "off"
    return f"Run {visible(request.name)}? (isolation: {settings.sandbox.level}, network: {network})"


def permission_content(request: ApprovalRequest, settings: PromptSettings) -> list[Any]:
    """The prompt's text (display-safe, the whole diff of an edit), then for an edit each file
    as an ACP diff (absolute path, old and new text) that editors show in their diff view. A diff
    that hides characters gets no diff blocks: an editor would show that text raw, so the person
    reviews the written-out text and its warning only."""
    content: list[Any] = [tool_content(text_block(permission_text(request, settings)))]
    if hidden_warning(shown_code(request)):
        return content
    for edit in request.edits:
        path = str(Path(settings.workspace, *edit.path.split("/")))
        content.append(tool_diff_content(path, edit.new_text or "", edit.old_text))
    return content


def parse_outcome(reply: Any, request: ApprovalRequest) -> tuple[ApprovalOutcome, str | None]:
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
    choices = offered_choices(request)
    if option_id == DENY_SESSION:
        deny = next(c for c in choices if c.kind == "deny")
        return ApprovalOutcome("deny", None, deny), option_id
    choice = next((c for c in choices if c.id == option_id), None)
    if choice is None:
        return ApprovalOutcome("failed", f"the client chose an unknown option {option_id!r}"), None
    if choice.kind == "deny":
        return ApprovalOutcome("deny", None, choice), option_id
    return ApprovalOutcome(BASE_DECISION[choice.kind], None, choice), option_id


class AcpPermissions:
    """Asks the client through ``session/request_permission``; remembers "always" answers."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn
        self._denied: dict[str, set[str]] = {}
        """Tools denied for the rest of a session (``reject_always``), by session id."""

    def remember(self, session_id: str, tool: str, option_id: str | None) -> None:
        """Record Gatehouse's own "deny for this session" (the rules an allow choice creates are
        recorded by the loop, from the outcome's choice)."""
        if option_id == DENY_SESSION:
            self._denied.setdefault(session_id, set()).add(tool)

    def forget(self, session_id: str) -> None:
        self._denied.pop(session_id, None)

    def for_turn(self, session_id: str, settings: PromptSettings, stream: AcpStream) -> Approver:
        async def approve(request: ApprovalRequest) -> ApprovalOutcome:
            if request.name in self._denied.get(session_id, ()):
                deny = next(c for c in offered_choices(request) if c.kind == "deny")
                return ApprovalOutcome("deny", f"{request.name} was denied for this session", deny)
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
            content=permission_content(request, settings),
            raw_input=request.arguments,
        )
        asked = self._conn.request_permission(
            session_id=session_id,
            tool_call=tool_call,
            options=permission_options(request),
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
        outcome, option_id = parse_outcome(reply, request)
        self.remember(session_id, request.name, option_id)
        return outcome
