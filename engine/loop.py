"""The agent loop: model turn -> parse tool calls -> gate -> execute -> feed results -> next turn.

The loop knows nothing of JSON-RPC. It reports progress through an event sink (typed events from
:mod:`engine.events`) and asks for approval through an async callback, so the stdio server, the
terminal harness and tests are thin adapters over the same code.

A turn ends when a model turn contains no tool call (``end_turn``), when the model hit
``max_tokens``, when a call arrives after ``max_tool_calls`` are spent (``tool_limit``), or when it
is cancelled. Cancellation is task cancellation: :meth:`TurnControl.cancel` cancels the task that
runs :meth:`AgentLoop.run`; every await point cleans up after itself (a pending approval is
withdrawn by the approver, a running process tree is killed by the sandbox), and the loop then
returns a ``cancelled`` result. A cancellation that did not come through the control (the
transport's own request cancel) propagates after the same clean-up.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from engine.approvals import ApprovalOutcome, ApprovalRequest, Approver, DecidedBy, decider
from engine.backends.base import Backend, Finish, Message, Notice, ToolSpec
from engine.events import (
    AgentEvent,
    ContentDelta,
    ReasoningDelta,
    StatusNote,
    StopReason,
    ToolArgsDelta,
    ToolEnded,
    ToolOutput,
    ToolStarted,
    ToolStatus,
)
from engine.hooks import NO_HOOKS, TurnHooks, changes_workspace
from engine.toolcalls import ArgsPreview, ParsedToolCall, ParseEvent, TextPiece, ToolCallParser
from engine.tools.base import Tool, ToolContext, ToolError, ToolOutcome
from engine.turns import Conversation, ToolCallRecord, TurnControl, TurnRequest, TurnResult

if TYPE_CHECKING:  # the runner and the workspace guard load with the first command
    from sandbox.box import Box

logger = logging.getLogger(__name__)

__all__ = [
    "DENIED_TEXT",
    "AgentLoop",
    "ApprovalOutcome",
    "ApprovalRequest",
    "Approver",
    "Conversation",
    "EventSink",
    "ToolCallRecord",
    "TurnControl",
    "TurnRequest",
    "TurnResult",
]

DENIED_TEXT = "The user denied this tool call."


EventSink = Callable[[AgentEvent], None]


def _new_call_id() -> str:
    return "call_" + secrets.token_hex(8)


def _call_key(name: str, arguments: dict[str, Any]) -> str:
    return name + "\0" + json.dumps(arguments, sort_keys=True, ensure_ascii=False)


class _Turn:
    """One request: the conversation it extends, its settings, and what happened so far."""

    def __init__(
        self,
        loop: AgentLoop,
        conversation: Conversation,
        request: TurnRequest,
        approve: Approver,
        emit: EventSink,
        *,
        hooks: TurnHooks = NO_HOOKS,
    ) -> None:
        self.loop = loop
        self.conversation = conversation
        self.request = request
        self.approve = approve
        self.emit = emit
        self.hooks = hooks
        self.changed = False
        """Whether a call that may change the workspace was let through this turn."""
        self.text_parts: list[str] = []
        self.records: list[ToolCallRecord] = []
        self.calls_used = 0
        self.succeeded: set[str] = set()
        self.offered = loop.offered_tools(request)
        self.box = loop.box.unconfined() if request.policy.bypass_permissions else loop.box

    def result(self, stop_reason: StopReason) -> TurnResult:
        return TurnResult(stop_reason, "".join(self.text_parts), list(self.records))

    def remember(self, message: Message) -> None:
        self.conversation.messages.append(message)
        self.hooks.message(message)

    async def run(self) -> StopReason:
        specs = [ToolSpec(t.name, t.description, t.parameters_schema()) for t in self.offered]
        limit = self.request.tool_rounds
        rounds = 0
        while True:
            answering = limit is not None and rounds >= limit
            raw, calls, finish = await self._model_turn([] if answering else specs)
            self.remember(Message("assistant", raw))
            if finish == "length":
                if calls:
                    # A turn cut off by max_tokens cannot be trusted to hold a finished call.
                    self.emit(StatusNote("The model reached maxTokens; its tool call was not run."))
                return "max_tokens"
            if not calls:
                return "end_turn"
            if answering:
                names = ", ".join(sorted({c.name or "a tool" for c in calls}))
                self.emit(
                    StatusNote(
                        f"{names} not run: this model answers after {limit} round(s) of calls."
                    )
                )
                return "tool_limit"
            rounds += 1
            for call in calls:
                if self.calls_used >= self.request.max_tool_calls:
                    self.emit(
                        StatusNote(
                            f"Tool call limit reached ({self.request.max_tool_calls}); "
                            f"{call.name or 'the call'} was not run."
                        )
                    )
                    return "tool_limit"
                self.calls_used += 1
                record, text = await self._handle_call(call)
                self.remember(Message("tool", text, record.name, record.id, status=record.status))

    async def _model_turn(self, specs: list[ToolSpec]) -> tuple[str, list[ParsedToolCall], str]:
        # Tools withheld for the answer turn still parse markup: it never reaches content.
        parser = ToolCallParser(tools_enabled=bool(self.offered))
        raw_parts: list[str] = []
        calls: list[ParsedToolCall] = []
        finish = "stop"

        def handle(events: list[ParseEvent]) -> None:
            for event in events:
                if isinstance(event, TextPiece):
                    if event.kind == "content":
                        self.text_parts.append(event.text)
                        self.emit(ContentDelta(event.text))
                    else:
                        self.emit(ReasoningDelta(event.text))
                elif isinstance(event, ArgsPreview):
                    self.emit(ToolArgsDelta(event.index, event.text))
                else:
                    calls.append(event)

        stream = self.loop.backend.stream(self.conversation.messages, specs, self.request.options)
        try:
            # aclosing: a threaded backend's worker is stopped and awaited however the loop ends.
            async with contextlib.aclosing(stream):
                async for chunk in stream:
                    if isinstance(chunk, Finish):
                        finish = chunk.reason
                        break
                    if isinstance(chunk, Notice):
                        self.emit(StatusNote(chunk.text))
                        continue
                    raw_parts.append(chunk)
                    handle(parser.feed(chunk))
        except asyncio.CancelledError:
            handle(parser.finish())
            self.remember(Message("assistant", "".join(raw_parts)))
            raise
        handle(parser.finish())
        return "".join(raw_parts), calls, finish

    def _problem(self, call: ParsedToolCall) -> tuple[Tool | None, Any, str | None]:
        """The tool, its validated arguments, or why the call cannot run (never asked about)."""
        if call.error is not None:
            return None, None, call.error
        tool = self.loop.tools.get(call.name)
        if tool is None or tool not in self.offered:
            known = ", ".join(sorted(t.name for t in self.offered)) or "none"
            return None, None, f"Unknown or disabled tool {call.name!r}. Available tools: {known}."
        try:
            args = tool.parse_arguments(call.arguments)
        except ToolError as exc:
            return None, None, str(exc)
        if tool.runs_code:
            refusal = self.box.refusal()
            if refusal is not None:  # never run weaker than the configured minimum
                return None, None, refusal
        if _call_key(call.name, call.arguments) in self.succeeded:
            return (
                None,
                None,
                ("Skipped: an identical call already succeeded in this turn; use its result."),
            )
        return tool, args, None

    async def _handle_call(self, call: ParsedToolCall) -> tuple[ToolCallRecord, str]:
        record = ToolCallRecord(_new_call_id(), call.name, call.arguments, "failed")
        self.records.append(record)

        def end(status: ToolStatus, text: str, outcome: ToolOutcome | None = None) -> None:
            record.status = status
            record.exit_code = outcome.exit_code if outcome else None
            self.hooks.call_ended(record, text)
            sandbox = outcome.sandbox if outcome else None
            protected = outcome.protected if outcome else ()
            self.emit(
                ToolEnded(
                    record.id, record.name, status, record.exit_code, text, sandbox, protected
                )
            )

        tool, args, problem = self._problem(call)
        needs_confirm = (
            tool is not None
            and self.request.policy.needs_confirm(tool)
            and call.name not in self.conversation.allowed_tools
        )
        self.emit(ToolStarted(record.id, record.name, record.arguments, needs_confirm))
        if tool is None:
            text = problem or "The tool call could not be run."
            end("failed", text)
            return record, text

        try:
            if needs_confirm:
                assert tool is not None
                refusal, decided_by = await self._ask(record, tool)
                if refusal is not None:
                    end(*refusal)
                    return record, refusal[1]
            else:
                decided_by = self._unasked_decider(tool)
                self.hooks.approval(record, "allow", decided_by)
            refused = await self._before_run(record, tool, decided_by)
            if refused is not None:
                self.emit(StatusNote(f"{record.name} not run: {refused}"))
                text = f"The tool call was not run: {refused}"
                end("failed", text)
                return record, text
            self.emit(StatusNote(f"Running {record.name}"))
            started = time.monotonic()
            outcome = await self._execute(tool, args, record)
            self.hooks.after_run(record, outcome, time.monotonic() - started)
        except asyncio.CancelledError:
            text = "The tool call was cancelled by the user."
            end("cancelled", text)
            self.remember(Message("tool", text, record.name, record.id, status="cancelled"))
            raise
        status: ToolStatus = "failed" if outcome.failed else "completed"
        if status == "completed" and outcome.exit_code in (None, 0):
            self.succeeded.add(_call_key(call.name, call.arguments))
        end(status, outcome.text, outcome)
        return record, outcome.text

    def _unasked_decider(self, tool: Tool) -> DecidedBy:
        """Who let a call through without a prompt."""
        policy = self.request.policy
        if policy.bypass_permissions:
            return "bypass"
        # the gate would ask, so an allow_session grant of this session let it through
        return "session_grant" if policy.needs_confirm(tool) else "not_required"

    async def _before_run(
        self, record: ToolCallRecord, tool: Tool, decided_by: DecidedBy
    ) -> str | None:
        """The memory's say before a call runs: a checkpoint before the turn's first change,
        the audit record of the execution. None, or why the call must not run."""
        if changes_workspace(tool) and not self.changed:
            refused = await self.hooks.before_first_change(record)
            if refused is not None:
                return refused
            self.changed = True
        return await self.hooks.before_run(record, tool, decided_by, self.box.bypass)

    async def _execute(self, tool: Tool, args: Any, record: ToolCallRecord) -> ToolOutcome:
        ctx = ToolContext(
            workspace=self.box.workspace,
            timeout_seconds=self.request.tool_timeout_seconds,
            on_output=lambda text: self.emit(ToolOutput(record.id, text)),
            box=self.box,
        )
        try:
            return await tool.run(args, ctx)
        except ToolError as exc:
            return ToolOutcome(text=str(exc), failed=True)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a tool bug must still end its call (tool_start -> tool_end)
            logger.exception("tool %s failed unexpectedly", record.name)
            return ToolOutcome(text=f"The tool failed unexpectedly: {exc}", failed=True)

    async def _ask(
        self, record: ToolCallRecord, tool: Tool
    ) -> tuple[tuple[ToolStatus, str] | None, DecidedBy]:
        """Ask for approval: (None, who allowed it) means run it; otherwise the status and what
        the model is told."""
        emit = self.emit
        emit(StatusNote(f"Waiting for approval: {record.name}"))
        reason = self.request.policy.reason(tool)
        self.hooks.approval_requested(record, reason)
        try:
            outcome = await self.approve(
                ApprovalRequest(record.id, record.name, record.arguments, reason)
            )
        except asyncio.CancelledError:
            self.hooks.approval(record, "cancelled", "cancel")
            raise
        except Exception as exc:  # fail closed: any doubt about an approval means no run
            logger.exception("approval callback failed")
            outcome = ApprovalOutcome("failed", f"the approval could not be obtained ({exc})")
        decision = outcome.decision
        decided_by = decider(outcome)
        self.hooks.approval(
            record, decision, decided_by, message=outcome.message, rule_id=outcome.rule_id
        )
        return self._refusal(record, outcome), decided_by

    def _refusal(
        self, record: ToolCallRecord, outcome: ApprovalOutcome
    ) -> tuple[ToolStatus, str] | None:
        emit = self.emit
        decision = outcome.decision
        if decision == "allow_session":
            self.conversation.allowed_tools.add(record.name)
        if decision in ("allow", "allow_session"):
            return None
        if decision == "deny":
            emit(StatusNote(f"Denied: {record.name}"))
            text = DENIED_TEXT
            if outcome.message:
                text += f" The user said: {outcome.message}"
            return "denied", text
        if decision == "timed_out":
            emit(StatusNote(f"No answer to the approval request for {record.name}: not run."))
            within = outcome.message or "the time limit"
            return "timed_out", f"The tool call was not run: no approval arrived within {within}."
        if decision == "cancelled":
            return "cancelled", "The tool call was cancelled before it was approved."
        why = outcome.message or "the approval failed"
        emit(StatusNote(f"Approval failed for {record.name} ({why}): not run."))
        return "denied", f"The tool call was not run: {why}."


class AgentLoop:
    """Runs requests against one backend with a fixed set of tools in one session's box."""

    def __init__(self, backend: Backend, tools: Mapping[str, Tool], box: Box) -> None:
        self.backend = backend
        self.tools = dict(tools)
        self.box = box

    def offered_tools(self, request: TurnRequest) -> list[Tool]:
        if not request.tools_enabled:
            return []
        names = request.enabled_tools
        return [tool for name, tool in self.tools.items() if names is None or name in names]

    async def run(
        self,
        conversation: Conversation,
        request: TurnRequest,
        approve: Approver,
        emit: EventSink,
        control: TurnControl | None = None,
        *,
        hooks: TurnHooks = NO_HOOKS,
    ) -> TurnResult:
        turn = _Turn(self, conversation, request, approve, emit, hooks=hooks)
        turn.remember(Message("user", request.prompt))
        try:
            stop = await turn.run()
        except asyncio.CancelledError:
            if control is None or not control.cancel_requested:
                raise
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            logger.info("turn cancelled by agent/cancel")
            return turn.result("cancelled")
        return turn.result(stop)
