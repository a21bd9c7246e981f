"""The gate as a state machine: Hypothesis explores interleavings of the real approval path
(:class:`server.approvals.Approvals` + :class:`engine.loop.AgentLoop`, in process) and checks,
after every step, the property users depend on:

    a call runs if and only if one valid allow (or a matching session grant) for exactly that
    call arrived before any deny, cancel, timeout or disconnect;

and every ``tool_start`` gets exactly one ``tool_end``.

Up to 4 sessions run turns at once. The client's side is played by the rules: replies of every
kind (allow, allow_session, deny, garbage, an error, a duplicate, a late one, one naming another
approval, one to a request that does not exist), ``agent/cancel``, ``$/cancelRequest`` in both
directions (the client cancelling our prompt; the client cancelling its chat), timeouts and a
disconnect. The channel behaves as :class:`server.transport.GatehouseProtocol` does: the first
reply to a pending request wins, a reply to anything else is dropped.

Time is virtual: the event loop's clock jumps forward when a rule says "time out", so the machine
never waits. The tool is a stand-in that records the call it ran (the sandbox and the wire have
suites of their own).
"""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from pygls.exceptions import JsonRpcException

from engine.backends.base import Backend, Finish, GenerationOptions
from engine.events import AgentEvent, ToolEnded, ToolStarted
from engine.gate import GatePolicy
from engine.loop import AgentLoop
from engine.tools.base import Tool, ToolArgs, ToolContext, ToolOutcome
from engine.turns import Conversation, TurnControl, TurnRequest
from sandbox.box import Box
from sandbox.tiers import unsandboxed
from server.approvals import Approvals, PromptSettings
from server.transport import ClientCancelled
from tests.stress.fuzz_settings import GATE_EXAMPLES, GATE_STEPS, fuzz_settings

TIMEOUT_SECONDS = 300.0
SESSIONS = 4


class _FakeClockLoop(asyncio.SelectorEventLoop):
    """An event loop whose clock jumps when told to (timeouts without waiting)."""

    def __init__(self) -> None:
        super().__init__()
        self.offset = 0.0

    def time(self) -> float:
        return super().time() + self.offset


class RunArgs(ToolArgs):
    token: str


class RecordingTool(Tool):
    """Runs code, as far as the gate knows; records every call it ran."""

    name = "run"
    description = "Run something."
    args_model = RunArgs
    kind = "execute"
    ran: ClassVar[list[str]] = []

    async def run(self, args: Any, ctx: ToolContext) -> ToolOutcome:
        self.ran.append(args.token)
        return ToolOutcome(text="ran", exit_code=0)


class CallingBackend(Backend):
    """Each model turn: one or two calls of ``run`` with fresh tokens after a user message, a
    plain answer after tool results."""

    name = "calls"
    model = "calls"

    def __init__(self, session: int, tokens: list[int]) -> None:
        self.session = session
        self.tokens = tokens

    async def stream(self, messages: Any, tools: Any, options: GenerationOptions) -> Any:
        del tools, options
        if messages and messages[-1].role == "user":
            calls = 2 if len(messages) % 2 else 1
            text = ""
            for _ in range(calls):
                self.tokens[0] += 1
                token = f"s{self.session}-t{self.tokens[0]}"
                call = {"name": "run", "arguments": {"token": token}}
                text += f"<tool_call>{json.dumps(call)}</tool_call>"
            yield text
        else:
            yield "done"
        yield Finish("stop")


@dataclass
class Request:
    """One approval request the server sent (``toolConfirm``)."""

    msg_id: str
    params: dict[str, Any]
    future: Future[Any]
    token: str
    session: int
    outcome: str | None = None
    """The first decisive event: allow, allow_session, or refused (anything else)."""


class FakeChannel:
    """The connection as the transport keeps it: first reply wins, others are dropped."""

    def __init__(self) -> None:
        self.requests: list[Request] = []
        self.outgoing: dict[str, Request] = {}
        self.withdrawn: list[str] = []
        self.session_of_turn: dict[str, int] = {}

    def send_request(self, method: str, params: Any = None, *, msg_id: str) -> Future[Any]:
        assert method == "toolConfirm"
        future: Future[Any] = Future()
        token = params["arguments"]["token"]
        session = int(token[1 : token.index("-")])
        request = Request(msg_id, params, future, token, session)
        self.requests.append(request)
        self.outgoing[msg_id] = request
        return future

    def withdraw_request(self, msg_id: str) -> None:
        request = self.outgoing.pop(msg_id, None)
        if request is not None and not request.future.done():
            request.future.cancel()
        self.withdrawn.append(msg_id)

    def reply(self, msg_id: str, *, result: Any = None, error: BaseException | None = None) -> bool:
        request = self.outgoing.pop(msg_id, None)
        if request is None or request.future.done():
            return False  # dropped, as the transport drops it
        if error is not None:
            request.future.set_exception(error)
        else:
            request.future.set_result(result)
        return True


@dataclass
class Session:
    index: int
    conversation: Conversation = field(default_factory=Conversation)
    task: asyncio.Task[Any] | None = None
    control: TurnControl | None = None
    granted: bool = False
    """A valid allow_session arrived (the session grant the model must match)."""


VALID = {
    "allow": {"decision": "allow"},
    "allow_echo": "echo",
    "allow_session": {"decision": "allow_session"},
    "allow_extra_field": {"decision": "allow", "clientNote": 1},  # clients may add fields
}
REFUSING = {
    "deny": {"decision": "deny"},
    "deny_message": {"decision": "deny", "message": "no"},
    "garbage_decision": {"decision": "yes please"},
    "garbage_type": ["allow"],
    "garbage_null": None,
    "garbage_decision_case": {"decision": "ALLOW"},
    "garbage_approval_type": {"decision": "allow", "approvalId": 7},
    "other_approval": {"decision": "allow", "approvalId": "another-approval"},
}


class GateMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.loop = _FakeClockLoop()
        asyncio.set_event_loop(self.loop)
        self.channel = FakeChannel()
        self.approvals = Approvals(self.channel)
        self.tokens = [0]
        self.sessions = [Session(i) for i in range(SESSIONS)]
        self.events: list[tuple[int, AgentEvent]] = []
        self.disconnected = False
        RecordingTool.ran = []
        self.ran_without_asking: set[str] = set()
        self.tool = RecordingTool()
        self.box = Box(Path("/nonexistent-gate-machine"))

    def teardown(self) -> None:
        for session in self.sessions:
            if session.task is not None and not session.task.done():
                session.task.cancel()
        self._settle()
        self.loop.close()
        asyncio.set_event_loop(None)

    # --- driving the loop ---------------------------------------------------------------

    def _settle(self) -> None:
        """Run the loop until nothing is ready (no real time passes)."""

        async def settle() -> None:
            quiet = 0
            while quiet < 3:
                await asyncio.sleep(0)
                quiet = quiet + 1 if not self.loop._ready else 0  # type: ignore[attr-defined]

        self.loop.run_until_complete(settle())

    def _pending(self) -> list[Request]:
        return [r for r in self.channel.requests if r.msg_id in self.channel.outgoing]

    # --- rules --------------------------------------------------------------------------

    @precondition(lambda self: not self.disconnected)
    @rule(index=st.integers(0, SESSIONS - 1))
    def start_turn(self, index: int) -> None:
        session = self.sessions[index]
        if session.task is not None and not session.task.done():
            return
        backend = CallingBackend(index, self.tokens)
        loop = AgentLoop(backend, {"run": self.tool}, self.box)
        request = TurnRequest(
            prompt="go", policy=GatePolicy(confirm_code_execution=True), max_tool_calls=4
        )
        settings = PromptSettings("toolConfirm", unsandboxed().info, "/ws", TIMEOUT_SECONDS)
        approver = self.approvals.for_turn(f"s{index}", f"s{index}:1", settings, lambda: None)
        control = TurnControl()

        def emit(event: AgentEvent) -> None:
            self.events.append((index, event))
            if (
                isinstance(event, ToolStarted)
                and not event.awaiting_confirmation
                and session.granted
            ):
                self.ran_without_asking.add(event.arguments.get("token", ""))

        async def run() -> Any:
            task = asyncio.current_task()
            assert task is not None
            control.bind(task)
            return await loop.run(session.conversation, request, approver, emit, control)

        session.control = control
        session.task = self.loop.create_task(run())
        self._settle()

    @precondition(lambda self: bool(self._pending()))
    @rule(data=st.data(), kind=st.sampled_from(sorted(VALID) + sorted(REFUSING)))
    def reply(self, data: st.DataObject, kind: str) -> None:
        request = data.draw(st.sampled_from(self._pending()))
        answer = VALID.get(kind, REFUSING.get(kind))
        if answer == "echo":
            answer = {"decision": "allow", "approvalId": request.params["approvalId"]}
        if self.channel.reply(request.msg_id, result=answer) and request.outcome is None:
            request.outcome = kind if kind in VALID else "refused"
            if kind == "allow_session":
                self.sessions[request.session].granted = True
        self._settle()

    @precondition(lambda self: bool(self._pending()))
    @rule(data=st.data())
    def error_reply(self, data: st.DataObject) -> None:
        request = data.draw(st.sampled_from(self._pending()))
        if self.channel.reply(request.msg_id, error=JsonRpcException(message="no")):
            request.outcome = request.outcome or "refused"
        self._settle()

    @precondition(lambda self: bool(self._pending()))
    @rule(data=st.data())
    def client_cancels_the_prompt(self, data: st.DataObject) -> None:
        request = data.draw(st.sampled_from(self._pending()))
        if self.channel.reply(request.msg_id, error=ClientCancelled("dismissed")):
            request.outcome = request.outcome or "refused"
        self._settle()

    @precondition(lambda self: bool(self.channel.requests))
    @rule(data=st.data(), kind=st.sampled_from(["allow", "allow_session", "deny"]))
    def duplicate_or_late_reply(self, data: st.DataObject, kind: str) -> None:
        """A reply to a request already answered, withdrawn or timed out: ignored."""
        request = data.draw(st.sampled_from(self.channel.requests))
        if request.msg_id in self.channel.outgoing:
            return  # still pending: that is the reply rule
        assert not self.channel.reply(request.msg_id, result={"decision": kind})
        self._settle()

    @rule(kind=st.sampled_from(["allow", "allow_session"]))
    def reply_to_a_request_never_sent(self, kind: str) -> None:
        assert not self.channel.reply("gatehouse-approval-guess", result={"decision": kind})
        self._settle()

    @precondition(lambda self: bool(self._pending()))
    @rule(data=st.data())
    def answer_with_another_requests_approval_id(self, data: st.DataObject) -> None:
        pending = self._pending()
        request = data.draw(st.sampled_from(pending))
        other = data.draw(st.sampled_from(self.channel.requests))
        if other is request:
            return
        answer = {"decision": "allow", "approvalId": other.params["approvalId"]}
        if self.channel.reply(request.msg_id, result=answer):
            request.outcome = request.outcome or "refused"
        self._settle()

    @rule(index=st.integers(0, SESSIONS - 1))
    def agent_cancel(self, index: int) -> None:
        session = self.sessions[index]
        if session.control is not None:
            session.control.cancel()
        self._mark_refused(index)
        self._settle()

    @rule(index=st.integers(0, SESSIONS - 1))
    def client_cancels_its_chat(self, index: int) -> None:
        """$/cancelRequest for the agent/chat itself: the task is cancelled (not via control)."""
        session = self.sessions[index]
        if session.task is not None and not session.task.done():
            session.task.cancel()
        self._mark_refused(index)
        self._settle()

    @precondition(lambda self: bool(self._pending()))
    @rule()
    def time_passes_beyond_the_approval_timeout(self) -> None:
        for request in self._pending():
            request.outcome = request.outcome or "refused"
        self.loop.offset += TIMEOUT_SECONDS + 1
        self._settle()

    @precondition(lambda self: not self.disconnected)
    @rule()
    def client_disconnects(self) -> None:
        """The server stops every turn (as on the end of input)."""
        self.disconnected = True
        for index, session in enumerate(self.sessions):
            if session.control is not None:
                session.control.cancel()
            self._mark_refused(index)
        self._settle()

    def _mark_refused(self, session: int) -> None:
        for request in self._pending():
            if request.session == session:
                request.outcome = request.outcome or "refused"

    # --- the property -------------------------------------------------------------------

    @invariant()
    def a_call_runs_iff_it_was_allowed(self) -> None:
        ran = list(RecordingTool.ran)
        assert len(ran) == len(set(ran)), f"a call ran twice: {ran}"
        asked = {r.token: r for r in self.channel.requests}
        for token in ran:
            request = asked.get(token)
            if request is None:
                assert token in self.ran_without_asking, f"{token} ran without any approval"
            else:
                assert request.outcome in VALID, f"{token} ran after {request.outcome}"
        for request in self.channel.requests:
            if request.outcome in VALID:
                assert request.token in ran, f"{request.token} was allowed but did not run"

    @invariant()
    def every_tool_start_has_one_tool_end(self) -> None:
        for session in self.sessions:
            if session.task is None or not session.task.done():
                continue
            starts = [
                e.tool_call_id
                for i, e in self.events
                if i == session.index and isinstance(e, ToolStarted)
            ]
            ends = [
                e.tool_call_id
                for i, e in self.events
                if i == session.index and isinstance(e, ToolEnded)
            ]
            assert sorted(starts) == sorted(ends), (starts, ends)


GateMachine.TestCase.settings = fuzz_settings(GATE_EXAMPLES, steps=GATE_STEPS)
test_the_gate_holds_over_every_interleaving = GateMachine.TestCase
