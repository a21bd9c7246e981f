"""A real ``gatehouse serve`` child over real stdio, driven synchronously (Hypothesis tests are
plain functions): raw frames in, every message out recorded by a reader thread, approvals
answered by a policy, and the invariants a user relies on checked on what was recorded."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DOCUMENTED_CODES = frozenset({-32700, -32600, -32601, -32602, -32800})
"""Codes a request may get. -32603 (an unexpected server error) is documented too, but the fuzz
counts it as a finding: something went wrong that the server did not foresee."""

OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "HF_ENDPOINT": "http://127.0.0.1:9"}
"""agent/pullModel must never reach a network: the hub is offline and points at a closed port."""


def frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def encode(message: Any) -> bytes:
    return frame(json.dumps(message).encode())


def id_key(msg_id: Any) -> str:
    """A response id as a key: ``1``, ``1.0`` and ``true`` are different ids."""
    return json.dumps(msg_id, sort_keys=True)


Answer = Callable[[dict[str, Any]], Any]
"""Answers a ``toolConfirm``: the result to send, or :data:`NO_ANSWER`."""

NO_ANSWER = object()


def deny(_params: dict[str, Any]) -> Any:
    return {"decision": "deny"}


@dataclass
class Approval:
    msg_id: Any
    params: dict[str, Any]
    answered: Any = None


@dataclass
class WireServer:
    """One server child. Start with :func:`start_server`."""

    proc: subprocess.Popen[bytes]
    workspace: Path
    answer: Answer = deny
    messages: list[dict[str, Any]] = field(default_factory=list)
    approvals: list[Approval] = field(default_factory=list)
    lock: threading.Condition = field(default_factory=threading.Condition)
    closed: bool = False
    responses: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """Responses by id (:func:`id_key`): a long fuzz run looks up thousands of ids among tens of
    thousands of messages."""
    _ids: Iterator[int] = field(default_factory=lambda: iter(range(1, 10**9)))
    write_lock: threading.Lock = field(default_factory=threading.Lock)

    # --- sending ---------------------------------------------------------------------------

    def send_raw(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        with self.write_lock:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()

    def send_in_pieces(self, data: bytes, size: int) -> None:
        """Write ``data`` ``size`` bytes at a time (nothing else is written in between)."""
        assert self.proc.stdin is not None
        with self.write_lock:
            for start in range(0, len(data), size):
                self.proc.stdin.write(data[start : start + size])
                self.proc.stdin.flush()

    def send(self, message: Any) -> None:
        self.send_raw(encode(message))

    def next_id(self, prefix: str = "r") -> str:
        return f"{prefix}{next(self._ids)}"

    def request(self, method: str, params: Any = None, seconds: float = 30) -> dict[str, Any]:
        """Send a request and return its response (the whole message)."""
        msg_id = self.next_id()
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return self.response_for(msg_id, seconds)

    def result(self, method: str, params: Any = None, seconds: float = 30) -> Any:
        response = self.request(method, params, seconds)
        assert "result" in response, response
        return response["result"]

    def ping(self, seconds: float) -> float:
        """``agent/status`` round trip in seconds; AssertionError when not answered in time."""
        started = time.monotonic()
        response = self.request("agent/status", {}, seconds)
        assert "result" in response, response
        return time.monotonic() - started

    # --- receiving ---------------------------------------------------------------------------

    def _read(self) -> None:
        assert self.proc.stdout is not None
        stdout = self.proc.stdout
        while True:
            length = None
            while True:
                line = stdout.readline()
                if not line:
                    with self.lock:
                        self.closed = True
                        self.lock.notify_all()
                    return
                if not line.strip():
                    break
                name, _, value = line.decode().partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            assert length is not None, "a frame without Content-Length from the server"
            message = json.loads(stdout.read(length))
            self._dispatch(message)

    def _dispatch(self, message: dict[str, Any]) -> None:
        if message.get("method") == "toolConfirm" and "id" in message:
            approval = Approval(message["id"], message["params"])
            result = self.answer(message["params"])
            approval.answered = result
            if result is not NO_ANSWER:
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": result})
        else:
            approval = None
        with self.lock:
            self.messages.append(message)
            if "method" not in message and ("result" in message or "error" in message):
                self.responses.setdefault(id_key(message.get("id")), []).append(message)
            if approval is not None:
                self.approvals.append(approval)
            self.lock.notify_all()

    def wait_until(self, predicate: Callable[[], bool], seconds: float = 30) -> None:
        deadline = time.monotonic() + seconds
        with self.lock:
            while not predicate():
                left = deadline - time.monotonic()
                if left <= 0 or self.closed:
                    raise AssertionError("condition not reached (server closed or too slow)")
                self.lock.wait(min(left, 0.5))

    def responses_for(self, msg_id: Any) -> list[dict[str, Any]]:
        with self.lock:
            return list(self.responses.get(id_key(msg_id), ()))

    def response_for(self, msg_id: Any, seconds: float = 30) -> dict[str, Any]:
        self.wait_until(lambda: bool(self.responses_for(msg_id)), seconds)
        return self.responses_for(msg_id)[0]

    def stream(self) -> list[dict[str, Any]]:
        with self.lock:
            return [m["params"] for m in self.messages if m.get("method") == "agent/stream"]

    # --- invariants --------------------------------------------------------------------------

    def unpaired_tool_calls(self) -> set[str]:
        """Tool calls with a ``tool_start`` and no ``tool_end``, or an end without a start."""
        started: set[str] = set()
        ended: list[str] = []
        for event in self.stream():
            if event["type"] == "tool_start":
                started.add(event["toolCallId"])
            elif event["type"] == "tool_end":
                ended.append(event["toolCallId"])
        return (started ^ set(ended)) | {i for i in ended if ended.count(i) > 1}

    def rss_kb(self) -> int:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise AssertionError("no VmRSS")

    def alive(self) -> bool:
        return self.proc.poll() is None

    # --- lifecycle ---------------------------------------------------------------------------

    def close(self) -> int:
        if self.alive():
            try:
                self.request("shutdown", None, 10)
                self.send({"jsonrpc": "2.0", "method": "exit"})
            except (AssertionError, OSError):
                pass
        try:
            return self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()
        finally:
            for pipe in (self.proc.stdin, self.proc.stdout):
                if pipe is not None:
                    pipe.close()

    def terminate(self) -> None:
        self.proc.send_signal(signal.SIGTERM)


def start_server(
    tmp_path: Path,
    turns: list[Any],
    *,
    answer: Answer = deny,
    one_at_a_time: bool = False,
    extra_args: list[str] | None = None,
    env: dict[str, str] | None = None,
    capabilities: dict[str, Any] | None = None,
    stderr: Any = None,
) -> WireServer:
    """A server on a scripted model, initialized (toolConfirm advertised unless ``capabilities``
    says otherwise)."""
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": turns, "oneAtATime": one_at_a_time}))
    argv = [sys.executable, "-m", "server", "--backend", "scripted", "--script", str(script)]
    argv += ["--workspace", str(workspace), *(extra_args or [])]
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=stderr if stderr is not None else _stderr_sink(),
        env={**os.environ, **OFFLINE_ENV, **(env or {})},
    )
    server = WireServer(proc, workspace, answer)
    threading.Thread(target=server._read, name="wire-reader", daemon=True).start()
    caps = capabilities if capabilities is not None else {"experimental": {"toolConfirm": True}}
    server.result("initialize", {"capabilities": caps}, 60)
    server.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    return server


def hermes_call(name: str, **arguments: Any) -> str:
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


def processes_with(marker: str) -> list[int]:
    """Processes (other than this one) whose command line holds ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline:
            found.append(int(entry.name))
    return found


def _stderr_sink() -> Any:
    """Where the server's log goes: $GATEHOUSE_STRESS_LOG (appended) when set, else nowhere."""
    path = os.environ.get("GATEHOUSE_STRESS_LOG")
    return open(path, "ab") if path else subprocess.DEVNULL
