"""The OpenAI-compatible backend against a fake server written here (HTTP/1.1 + SSE by hand).

What the loop sees must be exactly what it knows from local models: raw text deltas, native
tool calls as ``<tool_call>`` markup, reasoning as ``<think>``, one Finish. What the server sees
must be a valid OpenAI conversation: tools in function format, assistant ``tool_calls`` whose ids
match the tool results that follow. Every failure is a BackendError naming the URL, never the key.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from engine.backends.base import BackendError, Finish, GenerationOptions, Message, Notice, ToolSpec
from engine.backends.openai import OpenAIBackend, openai_messages
from engine.toolcalls import ParsedToolCall, TextPiece, ToolCallParser

API_KEY = "sk-test-5ecret-do-not-leak"
READ_FILE = ToolSpec(
    "read_file",
    "Read a file.",
    {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class FakeServer:
    """Answers ``/models`` and ``/chat/completions`` with whatever the test set up."""

    events: list[Any] = field(default_factory=list)
    """SSE payloads for the next chat: dicts (sent as JSON) or raw strings."""
    delay: float = 0.0
    status: int = 200
    error_body: str = ""
    models_status: int = 200
    end_early: bool = False
    """End the SSE body cleanly but without a finish_reason or [DONE] (a server that failed)."""
    requests: list[Received] = field(default_factory=list)
    prompt_tokens: Any = None
    """A function of a non-streamed request's body giving its usage.prompt_tokens (the tool
    probe); None: such requests get the SSE answer like any other (no usage)."""
    tools_status: int = 200
    """The status of a non-streamed request that carries tools."""
    disconnected: asyncio.Event = field(default_factory=asyncio.Event)
    disconnected_at: float = 0.0
    port: int = 0
    tasks: set[asyncio.Task[Any]] = field(default_factory=set)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def deltas(self, *contents: str, finish: str = "stop") -> None:
        self.events = [{"choices": [{"index": 0, "delta": {"content": c}}]} for c in contents]
        self.events.append({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self.tasks.add(task)
        watcher: asyncio.Task[None] | None = None
        try:
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
            method, path, _ = head[0].split(" ", 2)
            headers = {}
            for line in head[1:]:
                if line:
                    key, _, value = line.partition(":")
                    headers[key.strip().lower()] = value.strip()
            raw = await reader.readexactly(int(headers.get("content-length", "0")))
            self.requests.append(Received(method, path, headers, json.loads(raw) if raw else None))
            watcher = asyncio.create_task(self._watch(reader))
            if path.endswith("/models"):
                body = json.dumps({"object": "list", "data": [{"id": "fake-model"}]})
                await self._reply(writer, self.models_status, body)
            elif self.status != 200:
                await self._reply(writer, self.status, self.error_body)
            elif raw and json.loads(raw).get("stream") is False and self.prompt_tokens:
                await self._probe_reply(writer, json.loads(raw))
            else:
                await self._sse(writer)
            await watcher
        except (ConnectionError, asyncio.IncompleteReadError):
            self._mark_disconnected()
        except asyncio.CancelledError:
            pass  # the test is over: end quietly (asyncio logs a handler that ends cancelled)
        finally:
            if watcher is not None:
                watcher.cancel()
            writer.close()

    async def _watch(self, reader: asyncio.StreamReader) -> None:
        """The client closing its end is an EOF on our side."""
        with contextlib.suppress(ConnectionError):
            while await reader.read(1024):
                pass
        self._mark_disconnected()

    def _mark_disconnected(self) -> None:
        if not self.disconnected.is_set():
            self.disconnected_at = time.monotonic()
            self.disconnected.set()

    async def _reply(self, writer: asyncio.StreamWriter, status: int, body: str) -> None:
        data = body.encode()
        writer.write(
            f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n".encode()
            + data
        )
        await writer.drain()

    async def _probe_reply(self, writer: asyncio.StreamWriter, body: dict[str, Any]) -> None:
        if "tools" in body and self.tools_status != 200:
            await self._reply(writer, self.tools_status, '{"error": "tools are not supported"}')
            return
        message = {"role": "assistant", "content": "OK"}
        answer = {
            "choices": [{"index": 0, "message": message, "finish_reason": "length"}],
            "usage": {"prompt_tokens": self.prompt_tokens(body), "completion_tokens": 1},
        }
        await self._reply(writer, 200, json.dumps(answer))

    async def _sse(self, writer: asyncio.StreamWriter) -> None:
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
        )
        for event in self.events if self.end_early else [*self.events, "[DONE]"]:
            payload = event if isinstance(event, str) else json.dumps(event)
            data = f"data: {payload}\r\n\r\n".encode()
            writer.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            await writer.drain()
            await asyncio.sleep(self.delay)
        writer.write(b"0\r\n\r\n")
        await writer.drain()


@pytest.fixture
async def fake() -> AsyncIterator[FakeServer]:
    server = FakeServer()
    listener = await asyncio.start_server(server.handle, "127.0.0.1", 0)
    server.port = listener.sockets[0].getsockname()[1]
    try:
        yield server
    finally:
        listener.close()
        for task in server.tasks:
            task.cancel()
        await asyncio.gather(*server.tasks, return_exceptions=True)


def backend_for(fake: FakeServer, *, api_key: str | None = API_KEY) -> OpenAIBackend:
    return OpenAIBackend(base_url=fake.url, model="fake-model", api_key=api_key)


async def collect(
    backend: OpenAIBackend,
    messages: list[Message] | None = None,
    tools: list[ToolSpec] | None = None,
    options: GenerationOptions | None = None,
) -> list[str | Notice | Finish]:
    try:
        stream = backend.stream(
            messages or [Message("user", "hi")], tools or [], options or GenerationOptions()
        )
        return [item async for item in stream]
    finally:
        await backend.close()


def parse(chunks: list[str | Notice | Finish]) -> list[Any]:
    parser = ToolCallParser()
    events: list[Any] = []
    for chunk in chunks:
        if isinstance(chunk, str):
            events += parser.feed(chunk)
    return events + parser.finish()


def tool_delta(index: int, **fields: Any) -> dict[str, Any]:
    call: dict[str, Any] = {"index": index}
    if "id" in fields:
        call |= {"id": fields["id"], "type": "function"}
    call["function"] = {k: v for k, v in fields.items() if k in ("name", "arguments")}
    return {"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]}


async def test_content_streams_in_many_deltas(fake: FakeServer) -> None:
    pieces = ["Hel", "lo", ",", " wor", "ld", "!"]
    fake.deltas(*pieces)
    chunks = await collect(backend_for(fake))
    assert chunks == [*pieces, Finish("stop")]


async def test_native_tool_call_fragments_become_one_markup_block(fake: FakeServer) -> None:
    fake.events = [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "content": "Let me look."}}]},
        tool_delta(0, id="call_a", name="read_file", arguments=""),
        tool_delta(0, arguments='{"pa'),
        tool_delta(0, arguments='th": "REA'),
        tool_delta(0, arguments='DME.md"}'),
        tool_delta(1, id="call_b", name="list_files", arguments="{}"),
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]
    chunks = await collect(backend_for(fake), tools=[READ_FILE])
    assert chunks[-1] == Finish("stop")
    assert sum(isinstance(c, Finish) for c in chunks) == 1
    assert sum("<tool_call>" in c for c in chunks if isinstance(c, str)) == 2
    events = parse(chunks)
    calls = [e for e in events if isinstance(e, ParsedToolCall)]
    assert [(c.name, c.arguments, c.error) for c in calls] == [
        ("read_file", {"path": "README.md"}, None),
        ("list_files", {}, None),
    ]
    content = "".join(e.text for e in events if isinstance(e, TextPiece) and e.kind == "content")
    assert content.strip() == "Let me look."


async def test_arguments_that_are_not_json_reach_the_parser_as_an_error(fake: FakeServer) -> None:
    fake.events = [
        tool_delta(0, id="call_a", name="read_file", arguments='{"path": README'),
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]
    calls = [e for e in parse(await collect(backend_for(fake))) if isinstance(e, ParsedToolCall)]
    assert len(calls) == 1
    assert calls[0].name == "read_file"
    assert calls[0].error is not None
    assert "not JSON" in calls[0].error


async def test_finish_length(fake: FakeServer) -> None:
    fake.deltas("one", " two", finish="length")
    chunks = await collect(backend_for(fake), options=GenerationOptions(max_tokens=2))
    assert chunks == ["one", " two", Finish("length")]
    assert fake.requests[-1].body["max_tokens"] == 2


@pytest.mark.parametrize("key", ["reasoning_content", "reasoning"])
async def test_reasoning_streams_as_think(fake: FakeServer, key: str) -> None:
    fake.events = [
        {"choices": [{"index": 0, "delta": {key: "Think"}}]},
        {"choices": [{"index": 0, "delta": {key: "ing."}}]},
        {"choices": [{"index": 0, "delta": {"content": "Answer"}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    ]
    chunks = await collect(backend_for(fake))
    assert "".join(c for c in chunks if isinstance(c, str)) == "<think>Thinking.</think>Answer"
    kinds = {"reasoning": "", "content": ""}
    for event in parse(chunks):
        assert isinstance(event, TextPiece)
        kinds[event.kind] += event.text
    assert kinds == {"reasoning": "Thinking.", "content": "Answer"}


async def test_http_500_names_the_url_and_the_server_message(fake: FakeServer) -> None:
    fake.status = 500
    message = f"model crashed (key {API_KEY}) " + "x" * 1000
    fake.error_body = json.dumps({"error": {"message": message, "type": "server_error"}})
    backend = backend_for(fake)
    with pytest.raises(BackendError) as info:
        await collect(backend)
    text = str(info.value)
    assert fake.url in text
    assert "500" in text
    assert "model crashed" in text
    assert len(text) < 450  # the body is cut to 300 characters
    assert API_KEY not in text
    assert API_KEY not in repr(backend)


async def test_connection_refused_names_the_url(fake: FakeServer) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    backend = OpenAIBackend(base_url=url, model="m", api_key=API_KEY)
    with pytest.raises(BackendError) as info:
        await collect(backend)
    assert url in str(info.value)
    assert API_KEY not in str(info.value)
    with pytest.raises(BackendError, match="Cannot connect"):
        await backend.load()


async def test_mid_stream_error_event_is_a_backend_error(fake: FakeServer) -> None:
    fake.events = [
        {"choices": [{"index": 0, "delta": {"content": "par"}}]},
        {"error": {"message": "out of memory"}},
    ]
    with pytest.raises(BackendError, match="out of memory"):
        await collect(backend_for(fake))


async def test_request_is_an_openai_conversation(fake: FakeServer) -> None:
    fake.deltas("done")
    assistant = (
        "Reading both.<tool_call>\n"
        + json.dumps({"name": "read_file", "arguments": {"path": "a.txt"}})
        + "\n</tool_call><tool_call>"
        + json.dumps({"name": "read_file", "arguments": {"path": "b.txt"}})
        + "</tool_call>"
    )
    messages = [
        Message("user", "Read a.txt and b.txt"),
        Message("assistant", assistant),
        Message("tool", "A", name="read_file", tool_call_id="call_1"),
        Message("tool", "B", name="read_file", tool_call_id="call_2"),
        Message("assistant", "<think>hm</think>Both read."),
        Message("user", "thanks"),
    ]
    options = GenerationOptions(max_tokens=64, temperature=0.0, seed=7)
    await collect(backend_for(fake), messages, [READ_FILE], options)

    request = fake.requests[-1]
    assert (request.method, request.path) == ("POST", "/v1/chat/completions")
    assert request.headers["authorization"] == f"Bearer {API_KEY}"
    body = request.body
    assert body["model"] == "fake-model"
    assert body["stream"] is True
    assert (body["max_tokens"], body["temperature"], body["seed"]) == (64, 0.0, 7)
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "read_file",
                "description": "Read a file.",
                "parameters": READ_FILE.parameters,
            },
        }
    ]
    sent = body["messages"]
    assert [m["role"] for m in sent] == [
        "system", "user", "assistant", "tool", "tool", "assistant", "user"
    ]  # fmt: skip
    call_turn = sent[2]
    assert call_turn["content"] == "Reading both."
    assert [c["id"] for c in call_turn["tool_calls"]] == ["call_1", "call_2"]
    assert [c["type"] for c in call_turn["tool_calls"]] == ["function", "function"]
    functions = [c["function"] for c in call_turn["tool_calls"]]
    assert [f["name"] for f in functions] == ["read_file", "read_file"]
    assert [json.loads(f["arguments"]) for f in functions] == [{"path": "a.txt"}, {"path": "b.txt"}]
    assert sent[3] == {"role": "tool", "tool_call_id": "call_1", "content": "A"}
    assert sent[4] == {"role": "tool", "tool_call_id": "call_2", "content": "B"}
    assert sent[5] == {"role": "assistant", "content": "Both read."}


async def test_a_stream_that_stops_before_the_end_is_an_error(fake: FakeServer) -> None:
    fake.events = [{"choices": [{"index": 0, "delta": {"content": "par"}}]}]
    fake.end_early = True
    with pytest.raises(BackendError, match="ended before the model finished"):
        await collect(backend_for(fake))


async def test_no_authorization_header_without_a_key(fake: FakeServer) -> None:
    fake.deltas("ok")
    await collect(backend_for(fake, api_key=None))
    assert "authorization" not in fake.requests[-1].headers


def test_mapping_edge_cases() -> None:
    call = '<tool_call>{"name": "read_file", "arguments": {"path": "x"}}</tool_call>'
    # A call that got no result (tool limit, max_tokens) stays as text; a call-only turn has
    # no content; more results than calls still gives every result a call to answer.
    sent = openai_messages(
        [
            Message("user", "go"),
            Message("assistant", call),
            Message("user", "again"),
            Message("assistant", call),
            Message("tool", "X", name="read_file", tool_call_id="c1"),
            Message("tool", "Y", name="list_files", tool_call_id="c2"),
        ]
    )
    assert sent[2] == {"role": "assistant", "content": call}
    assert sent[4]["content"] == ""
    assert [c["id"] for c in sent[4]["tool_calls"]] == ["c1", "c2"]
    assert sent[4]["tool_calls"][1]["function"] == {"name": "list_files", "arguments": "{}"}
    assert [m["tool_call_id"] for m in sent[5:]] == ["c1", "c2"]


async def test_cancel_mid_stream_closes_the_connection(fake: FakeServer) -> None:
    fake.deltas(*[f"tok{i} " for i in range(200)])
    fake.delay = 0.02
    backend = backend_for(fake)
    first = asyncio.Event()

    async def consume() -> None:
        async with contextlib.aclosing(
            backend.stream([Message("user", "hi")], [], GenerationOptions())
        ) as stream:
            async for _ in stream:
                first.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(first.wait(), 5)
    cancelled_at = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.wait_for(fake.disconnected.wait(), 2)
    assert fake.disconnected_at - cancelled_at < 0.1
    await backend.close()


async def test_load_checks_the_endpoint(fake: FakeServer) -> None:
    notes: list[str] = []
    backend = backend_for(fake)
    await backend.load(notes.append)
    assert fake.requests[-1].path == "/v1/models"
    assert any("Connected" in n and fake.url in n for n in notes)
    fake.models_status = 404  # some servers have no /models: fine
    await backend.load(notes.append)
    fake.models_status = 401
    with pytest.raises(BackendError, match="401"):
        await backend.load()
    await backend.close()


def test_bad_base_url_is_refused() -> None:
    with pytest.raises(BackendError, match="base URL"):
        OpenAIBackend(base_url="localhost:8000/v1", model="m")
