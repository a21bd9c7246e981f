"""End-to-end fixtures: a real `gatehouse serve` child driven over stdio by pytest-lsp."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient
from pytest_lsp.client import register_lsp_features

from server.transport import make_converter

TOOL_CONFIRM_CAPS = lsp.ClientCapabilities(experimental={"toolConfirm": True})
MESSAGE_REQUEST_CAPS = lsp.ClientCapabilities(
    window=lsp.WindowClientCapabilities(show_message=lsp.ShowMessageRequestClientCapabilities())
)
NO_PROMPT_CAPS = lsp.ClientCapabilities()

Answer = Callable[[dict[str, Any]], Awaitable[Any]]


def tool_call(name: str, **arguments: Any) -> str:
    """Hermes-style call markup, as a model would write it."""
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


async def answer_allow(_params: dict[str, Any]) -> Any:
    return {"decision": "allow"}


@dataclass
class Peer:
    """One editor connected to one server."""

    client: LanguageClient
    workspace: Path
    stream: list[dict[str, Any]] = field(default_factory=list)
    confirms: list[dict[str, Any]] = field(default_factory=list)
    confirm_ids: list[Any] = field(default_factory=list)
    withdrawn: list[dict[str, Any]] = field(default_factory=list)
    """Approval requests the server withdrew ($/cancelRequest) while we were still deciding."""
    message_requests: list[Any] = field(default_factory=list)
    order: list[str] = field(default_factory=list)
    """Every agent/stream type, toolConfirm and showMessageRequest, in arrival order."""
    answer: Answer = answer_allow
    init_result: Any = None
    stopped: bool = False

    async def stop(self) -> None:
        """Shut the server down (``shutdown`` + ``exit``), as an editor closing does."""
        if not self.stopped:
            self.stopped = True
            try:
                await asyncio.wait_for(self.client.shutdown_session(), 10)
            finally:
                await self.client.stop()

    async def request(self, method: str, params: Any) -> Any:
        return await self.client.protocol.send_request_async(method, params)

    async def chat(self, prompt: str = "go", **params: Any) -> dict[str, Any]:
        result: dict[str, Any] = await self.request("agent/chat", {"prompt": prompt, **params})
        return result

    def send_chat(self, prompt: str = "go", **params: Any) -> asyncio.Future[Any]:
        """Send now (not at the first await), for tests where ordering matters."""
        future = self.client.protocol.send_request("agent/chat", {"prompt": prompt, **params})
        return asyncio.wrap_future(future)

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        return [m for m in self.stream if m["type"] == kind]

    def content(self) -> str:
        return "".join(m["text"] for m in self.of_type("content"))

    async def wait_for(self, predicate: Callable[[], bool], seconds: float = 20.0) -> None:
        deadline = asyncio.get_running_loop().time() + seconds
        while not predicate():
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError("condition not reached in time")
            await asyncio.sleep(0.02)


async def never_answer(_params: dict[str, Any]) -> Any:
    await asyncio.Event().wait()


async def expect_error(awaitable: Awaitable[Any]) -> Any:
    """Await a request that must fail; return the JSON-RPC error (code, message, data)."""
    try:
        result = await awaitable
    except Exception as exc:  # pygls raises JsonRpcException subclasses
        return exc
    raise AssertionError(f"expected a JSON-RPC error, got result {result!r}")


def process_running(marker: str) -> bool:
    """True while any process has ``marker`` in its command line."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline:
            return True
    return False


StartServer = Callable[..., Awaitable[Peer]]


@pytest_asyncio.fixture
async def start_server(tmp_path: Path) -> AsyncIterator[StartServer]:
    """Start a server on a scripted model: ``await start_server(turns, capabilities=...)``."""
    peers: list[Peer] = []

    async def start(
        turns: list[Any] | None = None,
        *,
        capabilities: lsp.ClientCapabilities = TOOL_CONFIRM_CAPS,
        init_options: dict[str, Any] | None = None,
        answer: Answer = answer_allow,
        workspace: Path | None = None,
        extra_env: dict[str, str] | None = None,
        server_args: list[str] | None = None,
        python: str | None = None,
    ) -> Peer:
        """``server_args`` replace the scripted backend's (e.g. ``["--backend", "llama_cpp"]``);
        ``python`` is the interpreter the server runs on (default: this one)."""
        ws = workspace or tmp_path / "ws"
        ws.mkdir(exist_ok=True)
        script = tmp_path / f"script{len(peers)}.json"
        script.write_text(json.dumps({"turns": turns or []}))
        client = LanguageClient(converter_factory=make_converter)
        register_lsp_features(client)
        peer = Peer(client, ws, answer=answer)

        @client.feature("agent/stream")
        def on_stream(params: dict[str, Any]) -> None:
            peer.stream.append(params)
            peer.order.append(params["type"])

        @client.feature("toolConfirm")
        async def on_confirm(params: dict[str, Any]) -> Any:
            peer.confirms.append(params)
            peer.confirm_ids.append(client.protocol.msg_id)
            peer.order.append("toolConfirm")
            try:
                return await peer.answer(params)
            except asyncio.CancelledError:
                peer.withdrawn.append(params)
                raise

        @client.feature(lsp.WINDOW_SHOW_MESSAGE_REQUEST)
        async def on_message_request(params: lsp.ShowMessageRequestParams) -> Any:
            peer.message_requests.append(params)
            peer.order.append("showMessageRequest")
            try:
                return await peer.answer({"message": params.message, "actions": params.actions})
            except asyncio.CancelledError:
                peer.withdrawn.append({"message": params.message})
                raise

        env = {**os.environ, **(extra_env or {})}
        args = server_args or ["--backend", "scripted", "--script", str(script)]
        await client.start_io(python or sys.executable, "-m", "server", *args, env=env)
        peer.init_result = await client.initialize_session(
            lsp.InitializeParams(
                capabilities=capabilities,
                workspace_folders=[lsp.WorkspaceFolder(uri=ws.as_uri(), name="ws")],
                initialization_options=init_options,
            )
        )
        peers.append(peer)
        return peer

    yield start
    for peer in peers:
        await peer.stop()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    return ws
