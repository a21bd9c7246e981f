"""Recording and replaying golden transcripts against a real server over stdio.

A transcript is a list of steps: ``{"send": message}`` (or ``{"sendRaw": text}`` for bytes that are
not a JSON-RPC message), ``{"expect": message}`` and ``{"writeFile": {"path", "content"}}`` (a
workspace file changed behind the server's back); ``files`` holds what the workspace holds first.
Values the server makes up are placeholders:
``<session:N>``, ``<call:N>``, ``<approval:N>``, ``<request:N>`` (a server request's id; bound at
first sight, equal ever after, also inside other strings such as turn and request ids),
``<workspace>``, ``<level>``, ``<time>`` (an ISO 8601 UTC time), ``<commit>`` (a checkpoint's id),
and ``<any>`` for text that depends on the machine (the sandbox's reason). Each server runs with a
data folder of its own beside the workspace. Consecutive text deltas of one kind are merged, since
the server coalesces them by time: a transcript records the merged text.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from harness.connection import encode_message, read_message
from server.protocol import AGENT_STREAM, METHODS, ErrorData, stream_event_adapter

ROOT = Path(__file__).resolve().parents[2]
TRANSCRIPTS = Path(__file__).resolve().parent / "transcripts"
READ_TIMEOUT = 20.0
QUIET_SECONDS = 0.3
"""After the last expected message, nothing more may arrive for this long."""

_TOKEN_FIELDS = {
    "sessionId": "session",
    "toolCallId": "call",
    "approvalId": "approval",
    "contentSha256": "content",
    "approvedSha256": "content",
    "ruleId": "rule",
}
_PLACEHOLDER = re.compile(
    r"<(session|call|approval|request|content|rule):(\d+)>|<workspace>|<level>|<any>|<time>|<commit>"
)
_MACHINE_FIELDS = {"created", "userFile"}
"""Values that depend on when or where a flow ran: recorded as ``<any>``."""
_FIXED = {
    "<time>": r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ",
    "<commit>": r"[0-9a-f]{40}",
}
_TIME = re.compile(_FIXED["<time>"])
_COMMIT = re.compile(_FIXED["<commit>"])
_TIME_FIELDS = {"created", "lastActivity", "started"}
_MERGEABLE = {"content", "reasoning", "tool_output", "tool_args"}
_LEVEL_IN_TEXT = re.compile(r"(isolation: )(strong|standard|limits-only|none)\b")


@dataclass
class Bindings:
    """What each placeholder stands for in this run."""

    values: dict[str, str] = field(default_factory=dict)
    workspace: str = ""

    def name_for(self, kind: str, value: str) -> str:
        for name, known in self.values.items():
            if known == value:
                return name
        count = sum(1 for name in self.values if name.startswith(f"<{kind}:"))
        name = f"<{kind}:{count + 1}>"
        self.values[name] = value
        return name

    def substitute(self, data: Any) -> Any:
        """Placeholders replaced by what they stand for (messages the client sends)."""
        if isinstance(data, str):
            text = data.replace("<workspace>", self.workspace)
            for name, value in self.values.items():
                text = text.replace(name, value)
            return text
        if isinstance(data, list):
            return [self.substitute(v) for v in data]
        if isinstance(data, dict):
            return {k: self.substitute(v) for k, v in data.items()}
        return data


def _collect_tokens(data: Any, bindings: Bindings) -> None:
    if isinstance(data, dict):
        for key, value in data.items():
            if key in _TOKEN_FIELDS and isinstance(value, str):
                bindings.name_for(_TOKEN_FIELDS[key], value)
            elif key == "toolCalls" and isinstance(value, list):
                for call in value:
                    if isinstance(call, dict) and isinstance(call.get("id"), str):
                        bindings.name_for("call", call["id"])
            _collect_tokens(value, bindings)
    elif isinstance(data, list):
        for value in data:
            _collect_tokens(value, bindings)


def normalise(data: Any, bindings: Bindings, key: str = "") -> Any:
    """A received message with made-up values replaced by placeholders (for recording)."""
    if key == "root":
        _collect_tokens(data, bindings)
        if isinstance(data, dict) and "method" in data and isinstance(data.get("id"), str):
            bindings.name_for("request", data["id"])  # a server request: its id is made up
    if isinstance(data, dict):
        out = {}
        for k, v in data.items():
            if k == "level" and v in ("strong", "standard", "limits-only", "none"):
                out[k] = "<level>"
            elif k == "reason" and isinstance(v, str) and len(v.split()) > 3:
                out[k] = "<any>"  # the sandbox's reason: a sentence about this machine
            elif k in _TIME_FIELDS and isinstance(v, str) and _TIME.fullmatch(v):
                out[k] = "<time>"
            elif k == "checkpoint" and isinstance(v, str) and _COMMIT.fullmatch(v):
                out[k] = "<commit>"
            elif k in _MACHINE_FIELDS and isinstance(v, str):
                out[k] = "<any>"
            else:
                out[k] = normalise(v, bindings, k)
        return out
    if isinstance(data, list):
        return [normalise(v, bindings, key) for v in data]
    if isinstance(data, str):
        text = data.replace(bindings.workspace, "<workspace>") if bindings.workspace else data
        text = _LEVEL_IN_TEXT.sub(r"\1<level>", text)
        for name, value in sorted(bindings.values.items(), key=lambda kv: -len(kv[1])):
            text = text.replace(value, name)
        return text
    return data


def _pattern(expected: str, bindings: Bindings) -> tuple[re.Pattern[str], list[str]]:
    parts, groups, last = [], [], 0
    for match in _PLACEHOLDER.finditer(expected):
        parts.append(re.escape(expected[last : match.start()]))
        token = match.group(0)
        if token == "<workspace>":
            parts.append(re.escape(bindings.workspace))
        elif token in _FIXED:
            parts.append(_FIXED[token])
        elif token == "<any>":
            parts.append(".*")
        elif token in bindings.values:
            parts.append(re.escape(bindings.values[token]))
        else:
            parts.append("(.+?)" if token != "<level>" else "(strong|standard|limits-only|none)")
            groups.append(token)
        last = match.end()
    parts.append(re.escape(expected[last:]))
    return re.compile("".join(parts), re.S), groups


def matches(expected: Any, actual: Any, bindings: Bindings, where: str = "$") -> None:
    """Assert ``actual`` is ``expected`` with its placeholders; binds new placeholders."""
    if isinstance(expected, str) and isinstance(actual, str):
        pattern, names = _pattern(expected, bindings)
        found = pattern.fullmatch(actual)
        assert found, f"{where}: expected {expected!r}, got {actual!r}"
        for name, value in zip(names, found.groups(), strict=True):
            bound = bindings.values.setdefault(name, value)
            assert bound == value, f"{where}: {name} was {bound!r}, now {value!r}"
        return
    if isinstance(expected, dict) and isinstance(actual, dict):
        assert set(expected) == set(actual), (
            f"{where}: keys {sorted(actual)} differ from the golden {sorted(expected)}"
        )
        for key in expected:
            matches(expected[key], actual[key], bindings, f"{where}.{key}")
        return
    if isinstance(expected, list) and isinstance(actual, list):
        assert len(expected) == len(actual), (
            f"{where}: {len(actual)} items, golden has {len(expected)}"
        )
        for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
            matches(e, a, bindings, f"{where}[{i}]")
        return
    assert expected == actual and type(expected) is type(actual), (
        f"{where}: expected {expected!r}, got {actual!r}"
    )


def merge_key(message: Any) -> tuple[str, ...] | None:
    """Messages that the server may split or merge freely: text deltas of one kind."""
    if not isinstance(message, dict) or message.get("method") != "agent/stream":
        return None
    params = message.get("params") or {}
    kind = params.get("type")
    if kind not in _MERGEABLE:
        return None
    return (kind, str(params.get("toolCallId", "")), str(params.get("index", "")))


class ServerPeer:
    """A real server child spoken to with raw framed messages."""

    def __init__(self, workspace: Path) -> None:
        self.workspace = workspace
        self.proc: asyncio.subprocess.Process | None = None
        self.inbox: asyncio.Queue[Any] = asyncio.Queue()
        self._reader: asyncio.Task[None] | None = None
        self._held: Any = None

    async def start(self, script: Path, capabilities: dict[str, Any], options: Any) -> None:
        argv = [
            *(sys.executable, "-P", "-m", "server", "--backend", "scripted"),
            *("--script", str(script), "--workspace", str(self.workspace)),
            *("--log-level", "WARNING"),
        ]
        self.proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            env={
                **os.environ,
                "PYTHONUNBUFFERED": "1",
                "GATEHOUSE_DATA_DIR": str(self.workspace.parent / "gatehouse-data"),
            },
        )
        self._reader = asyncio.create_task(self._read())
        params: dict[str, Any] = {"processId": None, "capabilities": capabilities}
        params["rootUri"] = self.workspace.as_uri()
        if options is not None:
            params["initializationOptions"] = options
        self.send({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": params})
        while True:
            message = await self.next()
            if message.get("id") == "init":
                break
        self.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})

    async def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        try:
            while True:
                await self.inbox.put(await read_message(self.proc.stdout))
        except (asyncio.IncompleteReadError, ConnectionError):
            await self.inbox.put(None)

    def send(self, message: Any) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(encode_message(message))

    def send_raw(self, text: str) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        body = text.encode("utf-8")
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    async def next(self, seconds: float = READ_TIMEOUT) -> Any:
        if self._held is not None:
            message, self._held = self._held, None
            return message
        message = await asyncio.wait_for(self.inbox.get(), seconds)
        assert message is not None, "the server closed the connection"
        return message

    async def next_merged(self, seconds: float = READ_TIMEOUT) -> Any:
        """The next message, with following text deltas of the same kind merged into it."""
        message = await self.next(seconds)
        key = merge_key(message)
        while key is not None:
            try:
                following = await self.next(QUIET_SECONDS)
            except TimeoutError:
                break
            if merge_key(following) != key:
                self._held = following
                break
            message["params"]["text"] += following["params"]["text"]
        return message

    async def close(self) -> None:
        if self.proc is None:
            return
        if self.proc.returncode is None:
            self.proc.kill()
        await self.proc.wait()
        if self._reader is not None:
            self._reader.cancel()


def write_files(workspace: Path, files: dict[str, str]) -> None:
    """Put ``files`` (relative path -> text) into the workspace."""
    for relative, content in files.items():
        path = workspace / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")


def _validate(message: dict[str, Any], sent: dict[Any, str]) -> None:
    """Every server message must also be what the protocol models say (server/protocol)."""
    method = message.get("method")
    if method == AGENT_STREAM:
        stream_event_adapter().validate_python(message["params"])
        return
    by_method = {m.name: m for m in METHODS}
    if method in by_method:
        by_method[method].params.model_validate(message["params"])
        return
    msg_id = message.get("id")
    request_method = sent.get(msg_id) if isinstance(msg_id, int | str) else None
    if request_method in by_method and "result" in message:
        result_model = by_method[request_method].result
        assert result_model.model_validate(message["result"]).wire() == message["result"]
    if "error" in message and message["error"].get("data") is not None:
        TypeAdapter(ErrorData).validate_python(message["error"]["data"])


async def replay(transcript: dict[str, Any], tmp: Path) -> None:
    """Run a golden transcript against a real server; AssertionError at the first difference.
    Every message is also validated against the protocol models."""
    workspace = tmp / "ws"
    workspace.mkdir(exist_ok=True)
    write_files(workspace, transcript.get("files", {}))
    script = tmp / "script.json"
    script.write_text(json.dumps({"turns": transcript["turns"]}), encoding="utf-8")
    peer = ServerPeer(workspace)
    bindings = Bindings(workspace=str(workspace.resolve()))
    try:
        await peer.start(
            script, transcript["capabilities"], transcript.get("initializationOptions")
        )
        sent: dict[Any, str] = {}
        for index, step in enumerate(transcript["steps"]):
            if "send" in step:
                message = bindings.substitute(step["send"])
                # A request whose id is not a string or an integer is refused (-32600).
                if "method" in message and isinstance(message.get("id"), int | str):
                    sent[message["id"]] = message["method"]
                peer.send(message)
            elif "sendRaw" in step:
                peer.send_raw(step["sendRaw"])
            elif "writeFile" in step:
                write_files(workspace, {step["writeFile"]["path"]: step["writeFile"]["content"]})
            else:
                expected = step["expect"]
                actual = await _merged_to(peer, expected)
                matches(expected, actual, bindings, f"step {index}")
                _validate(actual, sent)
        try:
            extra = await peer.next(QUIET_SECONDS)
        except TimeoutError:
            return
        raise AssertionError(f"a message the golden transcript does not have: {extra!r}")
    finally:
        await peer.close()


async def _merged_to(peer: ServerPeer, expected: Any) -> Any:
    """The next message; text deltas are merged until they hold the golden text."""
    message = await peer.next()
    key = merge_key(message)
    if key is None or merge_key(expected) != key:
        return message
    want = expected["params"]["text"]
    while len(message["params"]["text"]) < len(want):
        following = await peer.next()
        if merge_key(following) != key:
            peer._held = following
            break
        message["params"]["text"] += following["params"]["text"]
    return message
