"""A server that ignores ``tools`` (llama.cpp's server with ``--chat_format chatml``) is found out
once per server with a two-request probe; the tools are then described in the prompt and the
calls read from the text, exactly as for local models."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from engine.backends import tool_support
from engine.backends.base import GenerationOptions, Message, Notice
from engine.toolcalls import ParsedToolCall
from engine.toolcalls.markup import call_markup
from tests.unit.test_openai_backend import READ_FILE, FakeServer, backend_for, collect, parse

WC = call_markup("read_file", {"path": "README.md"})


@pytest.fixture(autouse=True)
def _fresh() -> None:
    tool_support.forget_all()


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


def ignores_tools(body: dict[str, Any]) -> int:
    return 12


def shows_tools(body: dict[str, Any]) -> int:
    return 12 + (150 if "tools" in body else 0)


def chats(server: FakeServer) -> list[dict[str, Any]]:
    return [r.body for r in server.requests if r.body and r.body.get("stream") is True]


async def test_a_server_that_ignores_tools_gets_them_in_the_prompt(fake: FakeServer) -> None:
    fake.prompt_tokens = ignores_tools
    fake.deltas("Let me read it.", WC)
    backend = backend_for(fake)
    chunks = await collect(backend, tools=[READ_FILE])
    notes = [c.text for c in chunks if isinstance(c, Notice)]
    assert notes == [
        f"{fake.url}: it ignores tools (12 prompt tokens with or without them); "
        "the tools are described in the prompt"
    ]
    (sent,) = chats(fake)
    assert "tools" not in sent
    system = sent["messages"][0]
    assert system["role"] == "system" and "<tool_call>" in system["content"]
    assert "- read_file: Read a file." in system["content"]
    assert "<tool_response>" in sent["stop"]
    calls = [e for e in parse(chunks) if isinstance(e, ParsedToolCall)]
    assert [(c.name, c.arguments) for c in calls] == [("read_file", {"path": "README.md"})]
    assert backend.tool_support == "prompt"


async def test_the_probe_runs_once_per_server(fake: FakeServer) -> None:
    fake.prompt_tokens = ignores_tools
    fake.deltas("ok")
    first, second = backend_for(fake), backend_for(fake)
    await collect(first, tools=[READ_FILE])
    later = [Message("user", "hi"), Message("assistant", WC), Message("tool", "x", "read_file")]
    chunks = await collect(second, later, [READ_FILE])
    assert not any(isinstance(c, Notice) for c in chunks)
    assert (first.probes, second.probes) == (1, 0)
    probes = [r for r in fake.requests if r.body and r.body.get("stream") is False]
    assert len(probes) == 2  # with and without tools, once
    # The history goes back as markup too: the server never sees a tool role.
    assert [m["role"] for m in chats(fake)[-1]["messages"]] == [
        "system",
        "user",
        "assistant",
        "user",
    ]


async def test_a_server_that_shows_tools_keeps_native_tools(fake: FakeServer) -> None:
    fake.prompt_tokens = shows_tools
    fake.deltas("ok")
    backend = backend_for(fake)
    chunks = await collect(backend, tools=[READ_FILE])
    assert not any(isinstance(c, Notice) for c in chunks)
    assert chats(fake)[0]["tools"][0]["function"]["name"] == "read_file"
    assert backend.tool_support == "native"


async def test_a_server_that_refuses_tools_gets_them_in_the_prompt(fake: FakeServer) -> None:
    fake.prompt_tokens, fake.tools_status = ignores_tools, 400
    fake.deltas("ok")
    chunks = await collect(backend_for(fake), tools=[READ_FILE])
    assert any(
        "refuses requests with tools (HTTP 400)" in c.text for c in chunks if isinstance(c, Notice)
    )
    assert "tools" not in chats(fake)[0]


async def test_without_usage_or_without_tools_nothing_changes(fake: FakeServer) -> None:
    fake.deltas("ok")  # answers the probe with SSE: no usage to compare
    backend = backend_for(fake)
    await collect(backend, tools=[READ_FILE])
    assert backend.tool_support == "native" and "tools" in chats(fake)[-1]
    plain = backend_for(fake)
    await collect(plain, [Message("user", "hi")], [], GenerationOptions())
    assert json.dumps(chats(fake)[-1]).count("tools") == 0
