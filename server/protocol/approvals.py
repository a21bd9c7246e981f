"""``toolConfirm``: the server asks the editor whether a tool call may run, and offers the choices
it would record."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from engine.approvals import ClientDecision
from engine.gate import ConfirmReason
from sandbox.info import IsolationLevel
from server.protocol.base import ClientAnswer, WireModel, optional
from server.protocol.rules import ChoiceView


class SandboxState(WireModel):
    """The isolation a call runs (or ran) under."""

    level: IsolationLevel = Field(description="strong, standard, limits-only or none.")
    network: bool = Field(description="Whether the code can reach the network.")


class ToolConfirmParams(WireModel):
    """``toolConfirm`` params (server -> client request)."""

    session_id: str = Field(description="The session of the call.")
    turn_id: str = Field(description="The turn of the call.")
    tool_call_id: str = Field(description="The call's id (as in agent/stream tool_start).")
    approval_id: str = Field(
        description="Unguessable id of this approval (192 random bits); a result that echoes "
        "another approvalId is refused."
    )
    name: str = Field(description="The tool's name.")
    arguments: dict[str, Any] = Field(description="Exactly what will run, in full.")
    reason: ConfirmReason = Field(
        description="code_execution (python/terminal under confirmCodeExecution), all_tools "
        "(confirmToolCalls) or ask_rule (an ask rule matched)."
    )
    sandbox: SandboxState = Field(description="The isolation the call would run under.")
    content_sha256: str = Field(
        description="SHA-256 of (tool, canonical arguments, working folder): what an allow "
        "approves. The executor refuses anything else; a result may echo it."
    )
    choices: list[ChoiceView] = Field(
        description="The answers to offer, Deny first, labels saying their scope. A client that "
        "ignores them answers with decision alone (allow_session then grants the allow_session "
        "choice's rule, or allows once when there is none)."
    )
    unclear: list[str] | None = optional(
        "terminal: why rules could not allow this command (e.g. 'runs a command "
        "substitution'), for the person."
    )


class ToolConfirmResult(ClientAnswer):
    """``toolConfirm`` result. Anything else (missing or unknown decision, wrong types) is
    malformed, and the call does not run."""

    decision: ClientDecision = Field(description="allow, allow_session or deny.")
    message: str | None = optional("Passed to the model on deny.")
    approval_id: str | None = optional(
        "Optional echo of the request's approvalId; when present it must match."
    )
    choice: str | None = optional(
        "The id of the chosen choice; its kind must agree with decision (deny: deny; "
        "allow_once and allow_always: allow; allow_session: allow_session), or the call does "
        "not run."
    )
    content_sha256: str | None = optional(
        "Optional echo of the request's contentSha256; when present it must match."
    )
