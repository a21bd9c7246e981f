"""Protocol fuzzing: Hypothesis drives one real server over real stdio with every kind of bad
input an editor or a broken client can send, and checks after every message what a user relies
on:

- the process is alive, and a ping (``agent/status``) is answered in time;
- every request got exactly one response, with a documented code (never -32603);
- nothing ran without approval (each command touches a marker file; a marker exists only if this
  client allowed exactly that call);
- no ``tool_start`` without its ``tool_end``;
- the server's memory grew by at most 50 MB over the run.

Messages: requests generated from the published schema (docs/schema/gatehouse.schema.json, with
hypothesis-jsonschema), the same with wrong types, unknown fields and extreme values, arbitrary
JSON, deep nesting, huge strings, random bytes, invalid UTF-8, bodies shorter or longer than
their ``Content-Length``, enormous lengths, frames written byte by byte, ``$/cancelRequest`` and
``agent/cancel`` for live and dead requests, replies to requests never sent, LSP notifications
with and without ids; then requests after ``shutdown``. ``GATEHOUSE_FUZZ=long`` (``make fuzz``)
sends more than 10,000 messages; ``make test`` a fixed-seed pass of about 1,050.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema

from tests.stress.fuzz_settings import (
    FUZZ_EXAMPLES,
    LONG,
    LONG_MESSAGES,
    PING_SECONDS,
    fuzz_settings,
)
from tests.stress.wire import (
    DOCUMENTED_CODES,
    WireServer,
    encode,
    frame,
    hermes_call,
    start_server,
)

SCHEMA = json.loads(
    (Path(__file__).parents[2] / "docs" / "schema" / "gatehouse.schema.json").read_text()
)
MARKERS = 400
RSS_GROWTH_LIMIT_KB = 50 * 1024


def _params(name: str) -> st.SearchStrategy[Any]:
    return from_schema({"$defs": SCHEMA["$defs"], **SCHEMA["$defs"][name]})


SCHEMA_REQUESTS: dict[str, st.SearchStrategy[Any]] = {
    "agent/chat": _params("ChatParams"),
    "agent/cancel": _params("CancelParams"),
    "agent/status": _params("StatusParams"),
    "agent/models": _params("ModelsParams"),
    "agent/pullModel": _params("PullModelParams"),
}

METHODS = [
    *SCHEMA_REQUESTS,
    "initialize",
    "initialized",
    "$/cancelRequest",
    "$/setTrace",
    "$/progress",
    "textDocument/didOpen",
    "textDocument/hover",
    "workspace/executeCommand",
    "window/workDoneProgress/cancel",
    "toolConfirm",
    "agent/stream",
    "agent/unknown",
    "",
]

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=40)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=10), inner, max_size=5)
    ),
    max_leaves=30,
)
bad_ids = st.sampled_from([None, True, 1.5, [1], {"x": 1}, -0.0])


@dataclass
class Fuzz:
    """The run's state: the server, what was sent, and what it answered."""

    server: WireServer
    expected: set[str] = field(default_factory=set)
    """Ids of requests that must get exactly one response."""
    sent: int = 0
    pings: list[float] = field(default_factory=list)
    allowed_commands: set[str] = field(default_factory=set)
    sessions: list[str] = field(default_factory=list)
    baseline_rss_kb: int = 0

    log: dict[str, str] = field(default_factory=dict)
    """What each expected request was (for the failure message)."""
    current: str = ""

    def request_id(self) -> str:
        msg_id = self.server.next_id("f")
        self.expected.add(msg_id)
        self.log[msg_id] = self.current
        return msg_id


def _answer_for(fuzz_ref: list[Fuzz]) -> Any:
    """Approvals: allow every third call (deterministic), deny the rest; remember what ran."""
    counter = iter(range(10**9))

    def answer(params: dict[str, Any]) -> Any:
        command = params.get("arguments", {}).get("command")
        if next(counter) % 3 == 0:
            if fuzz_ref and isinstance(command, str):
                fuzz_ref[0].allowed_commands.add(command)
            return {"decision": "allow"}
        return {"decision": "deny"}

    return answer


@pytest.fixture(scope="module")
def fuzz(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fuzz]:
    turns: list[Any] = []
    for index in range(MARKERS):
        turns += [hermes_call("terminal", command=f"touch m{index}"), f"answer {index}"]
    ref: list[Fuzz] = []
    server = start_server(tmp_path_factory.mktemp("fuzz"), turns, answer=_answer_for(ref))
    state = Fuzz(server)
    ref.append(state)
    state.baseline_rss_kb = server.rss_kb()
    yield state
    report = os.environ.get("GATEHOUSE_FUZZ_REPORT")
    if report:
        pings = sorted(state.pings)
        Path(report).write_text(
            json.dumps(
                {
                    "messages": state.sent,
                    "requests": len(state.expected),
                    "approvals": len(server.approvals),
                    "ping_median_ms": round(1000 * pings[len(pings) // 2], 2),
                    "ping_max_ms": round(1000 * pings[-1], 2),
                    "pings_over_1s": sum(p > 1 for p in pings),
                    "pings": len(pings),
                    "rss_growth_kb": server.rss_kb() - state.baseline_rss_kb,
                    "markers": len(list(server.workspace.glob("m*"))),
                },
                indent=2,
            )
        )
    server.close()
    if LONG:
        assert state.sent >= LONG_MESSAGES, f"the long pass sent only {state.sent} messages"


# --- actions: each sends one message (or one frame's worth of bytes) -------------------------


@st.composite
def schema_request(draw: st.DrawFn) -> tuple[str, Any]:
    method = draw(st.sampled_from(sorted(SCHEMA_REQUESTS)))
    params = draw(SCHEMA_REQUESTS[method])
    if isinstance(params, dict):
        # Approval must be needed for every command: the client never waives it here.
        for flag in ("bypassPermissions", "confirmCodeExecution"):
            params.pop(flag, None)
        if "maxTokens" in params and params["maxTokens"] is not None:
            params["maxTokens"] = min(params["maxTokens"], 10**6)
        mutation = draw(st.integers(0, 3))
        if mutation == 1 and params:
            key = draw(st.sampled_from(sorted(params)))
            params[key] = draw(json_values)
        elif mutation == 2:
            params[draw(st.text(min_size=1, max_size=12))] = draw(json_values)
    return method, params


def _send_request(fuzz: Fuzz, method: Any, params: Any, *, with_params: bool = True) -> None:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": fuzz.request_id(), "method": method}
    if with_params:
        message["params"] = params
    fuzz.server.send(message)


@st.composite
def action(draw: st.DrawFn) -> Any:
    kind = draw(
        st.sampled_from(
            [
                "schema",
                "schema",
                "schema",
                "chat",
                "random_message",
                "random_request",
                "bad_id",
                "notification",
                "cancel_request",
                "agent_cancel",
                "reply",
                "raw_bytes",
                "bad_utf8",
                "short_length",
                "long_length",
                "huge_length",
                "byte_by_byte",
                "deep",
                "huge_string",
                "huge_number",
            ]
        )
    )
    if kind == "schema":
        return kind, draw(schema_request())
    if kind == "chat":
        return kind, {"prompt": draw(st.text(min_size=1, max_size=30))}
    if kind in ("random_message", "random_request"):
        return kind, draw(
            st.dictionaries(
                st.sampled_from(["jsonrpc", "id", "method", "params", "result", "error"]),
                json_values,
                max_size=6,
            )
        )
    if kind == "bad_id":
        return kind, (draw(bad_ids), draw(st.sampled_from(METHODS)))
    if kind == "notification":
        return kind, (draw(st.sampled_from(METHODS)), draw(json_values))
    if kind in ("cancel_request", "agent_cancel", "reply"):
        return kind, (draw(st.integers(0, 50)), draw(json_values))
    if kind == "raw_bytes":
        return kind, draw(st.binary(max_size=200))
    if kind == "bad_utf8":
        return kind, draw(st.binary(min_size=1, max_size=20)).replace(b"\n", b" ")
    if kind in ("short_length", "long_length"):
        return kind, draw(st.integers(1, 30))
    if kind == "huge_length":
        return kind, draw(st.sampled_from([10**12, 2**63, 10**40, 16 * 1024 * 1024 + 1]))
    if kind == "byte_by_byte":
        return kind, draw(st.integers(1, 7))
    if kind == "deep":
        return kind, draw(st.sampled_from([100, 129, 500, 989, 1000, 3000, 20000]))
    if kind == "huge_string":
        return kind, draw(st.sampled_from([10_000, 100_001, 1_000_000, 4_000_001]))
    return kind, draw(st.sampled_from([4300, 4301, 5000, 20_000]))


def _status_frame(msg_id: str) -> bytes:
    return encode({"jsonrpc": "2.0", "id": msg_id, "method": "agent/status", "params": {}})


def perform(fuzz: Fuzz, kind: str, value: Any) -> None:
    server = fuzz.server
    fuzz.sent += 1
    fuzz.current = f"{kind}: {repr(value)[:300]}"
    if kind == "schema":
        method, params = value
        _send_request(fuzz, method, params)
    elif kind == "chat":
        session = fuzz.sessions[-1] if fuzz.sessions and len(value["prompt"]) % 2 else None
        params = {**value, "sessionId": session} if session else value
        _send_request(fuzz, "agent/chat", params)
    elif kind in ("random_message", "random_request"):
        message = dict(value)
        for key in ("method",):
            if message.get(key) in ("exit", "shutdown", "initialize"):
                message[key] = "agent/status"
        if kind == "random_request":
            message.update(jsonrpc="2.0", method=message.get("method", "agent/status"))
        if (
            "id" in message
            and isinstance(message["id"], int | str)
            and not isinstance(message["id"], bool)
        ):
            message["id"] = fuzz.request_id() if "method" in message else f"reply-{message['id']}"
            if "method" not in message:
                pass
        server.send(message)
    elif kind == "bad_id":
        bad_id, method = value
        if method in ("exit", "shutdown"):
            method = "agent/status"
        server.send({"jsonrpc": "2.0", "id": bad_id, "method": method, "params": {}})
    elif kind == "notification":
        method, params = value
        if method in ("exit", "shutdown"):
            method = "initialized"
        server.send({"jsonrpc": "2.0", "method": method, "params": params})
    elif kind == "cancel_request":
        back, _ = value
        target: Any = f"f{max(1, len(fuzz.expected) - back)}" if back else back
        server.send({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": target}})
    elif kind == "agent_cancel":
        back, _ = value
        session = fuzz.sessions[-1 - back % len(fuzz.sessions)] if fuzz.sessions else "s_none"
        _send_request(fuzz, "agent/cancel", {"sessionId": session})
    elif kind == "reply":
        back, result = value
        approvals = server.approvals
        target = approvals[-1 - back % len(approvals)].msg_id if approvals and back else back
        server.send({"jsonrpc": "2.0", "id": target, "result": result})
    elif kind in ("raw_bytes", "bad_utf8"):
        server.send_raw(frame(value if kind == "raw_bytes" else b'{"x": "' + value + b'\xff"}'))
    elif kind == "short_length":
        # The body is longer than Content-Length says: the rest is read as header garbage; the
        # next frame is found all the same.
        body = json.dumps({"jsonrpc": "2.0", "method": "initialized", "params": {}}).encode()
        cut = min(value, len(body) - 1)
        server.send_raw(b"Content-Length: %d\r\n\r\n" % cut + body)
    elif kind == "long_length":
        # Content-Length claims more than the body: the client pads the rest (as a client that
        # miscounted would go on writing); the frame is -32700, the next one is read.
        body = json.dumps({"jsonrpc": "2.0", "id": "x", "method": "agent/status"}).encode()
        server.send_raw(b"Content-Length: %d\r\n\r\n" % (len(body) + value) + body + b"x" * value)
    elif kind == "huge_length":
        server.send_raw(b"Content-Length: %d\r\n\r\n" % value)
    elif kind == "byte_by_byte":
        server.send_in_pieces(_status_frame(fuzz.request_id()), value)
    elif kind == "deep":
        msg_id = fuzz.request_id()
        head = (
            b'{"jsonrpc": "2.0", "id": "%s", "method": "agent/chat", "params": ' % msg_id.encode()
        )
        server.send_raw(frame(head + b'{"p": ' + b"[" * value + b"]" * value + b"}}"))
        if value >= 900:  # too deep to decode (-32700, id null): its id cannot be answered
            fuzz.expected.discard(msg_id)
    elif kind == "huge_string":
        # Refused requests (an unknown field): nothing is kept, so memory must come back. A
        # huge *prompt* would be kept by its session (sessions live as long as the server).
        method = "agent/chat" if value % 2 else "agent/status"
        _send_request(fuzz, method, {"prompt": "go", "huge": "y" * value})
    else:
        body = b'{"jsonrpc": "2.0", "method": "agent/status", "id": 1, "n": ' + b"7" * value + b"}"
        server.send_raw(frame(body))


def check_invariants(fuzz: Fuzz) -> None:
    server = fuzz.server
    assert server.alive(), "the server died"
    fuzz.pings.append(server.ping(PING_SECONDS))


def check_answers(fuzz: Fuzz) -> None:
    server = fuzz.server
    pending = set(fuzz.expected)

    def all_answered() -> bool:
        return all(server.responses_for(msg_id) for msg_id in pending)

    try:
        server.wait_until(all_answered, 30)
    except AssertionError:
        missing = sorted(i for i in pending if not server.responses_for(i))
        raise AssertionError(f"unanswered: {[(i, fuzz.log.get(i)) for i in missing]}") from None
    for msg_id in pending:
        responses = server.responses_for(msg_id)
        assert len(responses) == 1, (msg_id, responses)
        response = responses[0]
        if "error" in response:
            assert response["error"]["code"] in DOCUMENTED_CODES, response
            assert "traceback" not in json.dumps(response).lower(), response
        elif isinstance(response.get("result"), dict) and "sessionId" in response["result"]:
            session = response["result"]["sessionId"]
            if session not in fuzz.sessions:
                fuzz.sessions.append(session)
    for response in server.responses_for(None):
        assert response["error"]["code"] in DOCUMENTED_CODES, response
    assert server.unpaired_tool_calls() == set()
    for marker in server.workspace.glob("m*"):
        assert f"touch {marker.name}" in fuzz.allowed_commands, f"{marker.name} ran unapproved"
    assert not any(
        m.get("method") == "window/showMessage" and "Error" in json.dumps(m)
        for m in server.messages
    )


@given(st.lists(action(), min_size=8, max_size=24))
@fuzz_settings(FUZZ_EXAMPLES)
def test_fuzzed_messages_never_break_the_server(fuzz: Fuzz, actions: list[Any]) -> None:
    for kind, value in actions:
        perform(fuzz, kind, value)
        check_invariants(fuzz)
    check_answers(fuzz)
    growth = fuzz.server.rss_kb() - fuzz.baseline_rss_kb
    assert growth <= RSS_GROWTH_LIMIT_KB, f"RSS grew by {growth} kB"


def test_after_shutdown_every_request_is_refused_and_exit_ends_the_server(
    tmp_path: Path,
) -> None:
    server = start_server(tmp_path, ["hello"])
    server.result("shutdown", None)
    for method in ("agent/status", "agent/chat", "initialize", "shutdown", "agent/cancel"):
        response = server.request(method, {"prompt": "x"})
        assert response["error"]["code"] == -32600, response
    server.send({"jsonrpc": "2.0", "method": "exit"})
    started = time.monotonic()
    assert server.proc.wait(30) == 0 and time.monotonic() >= started
