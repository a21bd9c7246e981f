"""The agent loop: model turn -> parse tool calls -> gate -> execute -> feed results -> next turn.

The loop knows nothing of JSON-RPC. It reports progress through an event sink (typed events from
:mod:`engine.events`) and asks for approval through an async callback, so the stdio server, the
terminal harness and tests are thin adapters over the same code.

A turn ends when a model turn contains no tool call (``end_turn``), when the model hit
``max_tokens``, when a call arrives after ``max_tool_calls`` are spent (``tool_limit``), when the
backend fails mid-stream (``error``: a status event says why; nothing the model was writing runs),
or when it is cancelled. Cancellation is task cancellation: :meth:`TurnControl.cancel` cancels
the task that runs :meth:`AgentLoop.run`; every await point cleans up after itself (a pending
approval is withdrawn by the approver, a running process tree is killed by the sandbox), and the
loop then returns a ``cancelled`` result. A cancellation that did not come through the control (the
transport's own request cancel) propagates after the same clean-up.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from engine.approvals import ApprovalOutcome, ApprovalRequest, Approver, Decision
from engine.asking import DENIED_TEXT, Asking, unasked_decider
from engine.backends.base import Backend, Finish, Message, Notice, ToolSpec
from engine.edits import EditorDocuments
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
from engine.rules.book import RuleBook
from engine.rules.decision import DecidedBy
from engine.rules.policy import Verdict, decide
from engine.toolcalls import ArgsPreview, ParsedToolCall, ParseEvent, TextPiece, ToolCallParser
from engine.tools.base import Tool, ToolContext, ToolError, ToolOutcome, canonical_arguments
from engine.tools.edits import EditTool, Proposal, WrittenBeforeCancel, uncut
from engine.tools.protected import always_ask
from engine.turns import Conversation, ToolCallRecord, TurnControl, TurnRequest, TurnResult
from sandbox.binding import content_digest

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

EventSink = Callable[[AgentEvent], None]


def _new_call_id() -> str:
    return "call_" + secrets.token_hex(8)


def _call_key(name: str, arguments: dict[str, Any]) -> str:
    return name + "\0" + json.dumps(arguments, sort_keys=True, ensure_ascii=False)


class _ModelFailed(Exception):
    """The backend raised, or streamed something that is not text, during a model turn."""


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
        self.succeeded: dict[str, bool] = {}
        """Calls that succeeded in this turn (skipped if repeated) -> whether they only read."""
        self.offered = loop.offered_tools(request)
        self.box = loop.box.unconfined() if request.policy.bypass_permissions else loop.box
        self.book = RuleBook(
            request.rules, conversation.grants, request.user_rules_folder, request.rules_scope
        )
        self.asking = Asking(approve, emit, self.book, conversation.key, hooks)

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
            try:
                raw, calls, finish = await self._model_turn([] if answering else specs)
            except _ModelFailed as exc:
                # The model broke off (raised, or sent what is not text): nothing it was
                # writing runs; the turn ends with what was said so far.
                self.emit(StatusNote(f"The model failed ({exc}); the turn ended."))
                return "error"
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
                    if not isinstance(chunk, str):
                        raise TypeError(f"the backend sent {type(chunk).__name__}, not text")
                    raw_parts.append(chunk)
                    handle(parser.feed(chunk))
        except asyncio.CancelledError:
            handle(parser.finish())
            self.remember(Message("assistant", "".join(raw_parts)))
            raise
        except Exception as exc:
            logger.warning("the model failed mid-turn", exc_info=True)
            self.remember(Message("assistant", "".join(raw_parts)))
            raise _ModelFailed(str(exc) or type(exc).__name__) from exc
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
            text = "Skipped: an identical call already succeeded in this turn; use its result."
            return None, None, text
        return tool, args, None

    def _context(self, record: ToolCallRecord) -> ToolContext:
        return ToolContext(
            workspace=self.box.workspace,
            timeout_seconds=self.request.tool_timeout_seconds,
            on_output=lambda text: self.emit(ToolOutput(record.id, text)),
            box=self.box,
            reads=self.conversation.reads,
            documents=self.loop.documents,
            before_change=self.loop.before_change,
        )

    async def _handle_call(self, call: ParsedToolCall) -> tuple[ToolCallRecord, str]:
        record = ToolCallRecord(_new_call_id(), call.name, call.arguments, "failed")
        self.records.append(record)
        named = self.loop.tools.get(call.name)
        if named is not None and named.kind not in ("read", "search"):
            # Files may change (or be found changed): a read already made may be made again.
            self.succeeded = {k: reads for k, reads in self.succeeded.items() if not reads}

        def end(status: ToolStatus, text: str, outcome: ToolOutcome | None = None) -> None:
            record.status = status
            record.exit_code = outcome.exit_code if outcome else None
            self.hooks.call_ended(record, text)
            sandbox = outcome.sandbox if outcome else None
            protected = outcome.protected if outcome else ()
            edits = outcome.edits if outcome else ()
            self.emit(
                ToolEnded(
                    record.id,
                    record.name,
                    status,
                    record.exit_code,
                    text,
                    sandbox,
                    protected,
                    record.decided_by,
                    edits,
                )
            )

        def cancelled(outcome: ToolOutcome | None) -> None:
            status: ToolStatus = "cancelled"
            text = "The tool call was cancelled by the user."
            if outcome is not None:  # an edit finished writing before the cancel took effect
                status, text = ("failed" if outcome.failed else "completed"), outcome.text
            end(status, text, outcome)
            self.remember(Message("tool", text, record.name, record.id, status=status))

        tool, args, problem = self._problem(call)
        ctx = self._context(record)
        proposal: Proposal | None = None
        if isinstance(tool, EditTool):
            try:
                proposal = await tool.propose(args, ctx)  # the diffs; nothing is written
            except asyncio.CancelledError:
                self.emit(ToolStarted(record.id, record.name, record.arguments, False))
                cancelled(None)
                raise
            except ToolError as exc:
                tool, problem = None, str(exc)
            except Exception as exc:
                logger.exception("tool %s failed unexpectedly", record.name)
                tool, problem = None, f"The tool failed unexpectedly: {exc}"
        verdict: Verdict | None = None
        if tool is not None:
            arguments = canonical_arguments(args)
            digest = content_digest(tool.name, arguments, self.box.workspace)
            verdict = decide(
                self.request.policy,
                tool,
                arguments,
                self.book.index,
                digest,
                can_remember=self.book.user_folder is not None,
            )
            if proposal is not None and proposal.protected:
                verdict = always_ask(verdict, self.request.policy)  # an auto-run path
        needs_confirm = verdict is not None and verdict.outcome == "ask"
        self.emit(ToolStarted(record.id, record.name, record.arguments, needs_confirm))
        if tool is None or verdict is None:
            text = problem or "The tool call could not be run."
            end("failed", text)
            return record, text
        record.decided_by = verdict.decided_by
        if verdict.outcome == "deny":
            assert verdict.decided_by is not None
            self._unasked(record, "deny", verdict.decided_by)
            self.emit(StatusNote(f"Denied: {record.name} ({verdict.decided_by.detail})"))
            text = f"The tool call was not run: it is {verdict.decided_by.detail}."
            end("denied", text)
            return record, text

        try:
            versions = None
            if needs_confirm:
                edits = proposal.edits if proposal is not None else ()
                refusal, versions = await self.asking.ask(record, verdict, arguments, digest, edits)
                if refusal is not None:
                    end(*refusal)
                    return record, refusal[1]
            elif verdict.decided_by is not None:
                self._unasked(record, "allow", verdict.decided_by)
            decided = record.decided_by
            # What the tool is handed must be what was decided (the process is checked again
            # by the executor right before it starts).
            now = content_digest(tool.name, canonical_arguments(args), self.box.workspace)
            if decided is None or now != decided.content_sha256:
                text = "The tool call was not run: it is not what was approved."
                end("failed", text)
                return record, text
            refused = await self._before_run(record, tool)
            if refused is not None:  # fail closed: no checkpoint or no audit record, no run
                self.emit(StatusNote(f"{record.name} not run: {refused}"))
                text = f"The tool call was not run: {refused}"
                end("failed", text)
                return record, text
            self.emit(StatusNote(f"Running {record.name}"))
            ctx = replace(ctx, digest=decided.content_sha256)
            started = time.monotonic()
            if isinstance(tool, EditTool) and proposal is not None:
                # A cancel never cuts a write off half-way: the call reports what is on disk.
                outcome = await uncut(self._guarded(tool.apply(proposal, ctx, versions), record))
            else:
                outcome = await self._guarded(tool.run(args, ctx), record)
            self.hooks.after_run(record, outcome, time.monotonic() - started)
        except asyncio.CancelledError as exc:
            cancelled(exc.outcome if isinstance(exc, WrittenBeforeCancel) else None)
            raise
        status: ToolStatus = "failed" if outcome.failed else "completed"
        if status == "completed" and outcome.exit_code in (None, 0):
            self.succeeded[_call_key(call.name, call.arguments)] = tool.kind in ("read", "search")
        end(status, outcome.text, outcome)
        return record, outcome.text

    def _unasked(self, record: ToolCallRecord, decision: Decision, decided: DecidedBy) -> None:
        """Tell the hooks how a call nobody was asked about was decided."""
        record.via, rule_id = unasked_decider(decided, self.request.policy.bypass_permissions)
        self.hooks.approval(record, decision, record.via, rule_id=rule_id)

    async def _before_run(self, record: ToolCallRecord, tool: Tool) -> str | None:
        """The memory's say before a call runs: a checkpoint before the turn's first change,
        the audit record of the execution. None, or why the call must not run."""
        if changes_workspace(tool) and not self.changed:
            refused = await self.hooks.before_first_change(record)
            if refused is not None:
                return refused
            self.changed = True
        return await self.hooks.before_run(record, tool, record.via or "approver", self.box.bypass)

    async def _guarded(
        self, running: Coroutine[Any, Any, ToolOutcome], record: ToolCallRecord
    ) -> ToolOutcome:
        try:
            return await running
        except ToolError as exc:
            return ToolOutcome(text=str(exc), failed=True)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a tool bug must still end its call (tool_start -> tool_end)
            logger.exception("tool %s failed unexpectedly", record.name)
            return ToolOutcome(text=f"The tool failed unexpectedly: {exc}", failed=True)


class AgentLoop:
    """Runs requests against one backend with a fixed set of tools in one session's box."""

    def __init__(
        self,
        backend: Backend,
        tools: Mapping[str, Tool],
        box: Box,
        *,
        documents: EditorDocuments | None = None,
        before_change: Callable[[tuple[str, ...]], Awaitable[None]] | None = None,
    ) -> None:
        self.backend = backend
        self.tools = dict(tools)
        self.box = box
        self.documents = documents
        """The editor's open documents: an edit of a file with unsaved changes is refused."""
        self.before_change = before_change
        """Awaited right before an approved edit is written (checkpoints)."""

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
