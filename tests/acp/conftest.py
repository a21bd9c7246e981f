"""ACP fixtures: a real ``gatehouse acp`` child driven over stdio by the official SDK's client
side (``acp.spawn_agent_process``): a client nobody here wrote."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest_asyncio
from acp import PROTOCOL_VERSION, spawn_agent_process, text_block
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    Implementation,
    PermissionOption,
    RequestPermissionResponse,
    ToolCallUpdate,
)

Decide = Callable[[ToolCallUpdate, list[PermissionOption]], Awaitable[Any]]


def tool_call(name: str, **arguments: Any) -> str:
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


def pick(kind: str) -> Decide:
    """Answer every permission request with the first option of ``kind``."""

    async def decide(_call: ToolCallUpdate, options: list[PermissionOption]) -> Any:
        chosen = next(o for o in options if o.kind == kind)
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=chosen.option_id)
        )

    return decide


def pick_id(option_id: str) -> Decide:
    """Answer every permission request with the option ``option_id``."""

    async def decide(_call: ToolCallUpdate, options: list[PermissionOption]) -> Any:
        assert option_id in [o.option_id for o in options], options
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=option_id)
        )

    return decide


async def cancelled(_call: ToolCallUpdate, _options: list[PermissionOption]) -> Any:
    return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))


async def never(_call: ToolCallUpdate, _options: list[PermissionOption]) -> Any:
    await asyncio.sleep(3600)


@dataclass
class Recorder:
    """The client: records every update and permission request, answers with ``decide``."""

    decide: Decide = field(default=pick("allow_once"))
    updates: list[Any] = field(default_factory=list)
    permissions: list[tuple[ToolCallUpdate, list[PermissionOption]]] = field(default_factory=list)
    order: list[str] = field(default_factory=list)

    async def request_permission(
        self, session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption], **_: Any
    ) -> Any:
        self.permissions.append((tool_call, options))
        self.order.append("request_permission")
        return await self.decide(tool_call, options)

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        self.updates.append(update)
        self.order.append(update.session_update)

    def of(self, kind: str) -> list[Any]:
        return [u for u in self.updates if u.session_update == kind]

    def text(self, kind: str = "agent_message_chunk") -> str:
        return "".join(u.content.text for u in self.of(kind))

    def on_connect(self, conn: Any) -> None:
        pass

    async def wait_for(self, condition: Callable[[], bool], seconds: float = 30) -> None:
        async with asyncio.timeout(seconds):
            while not condition():  # noqa: ASYNC110 - the updates arrive from the SDK's tasks
                await asyncio.sleep(0.02)


@dataclass
class AcpPeer:
    conn: Any
    process: Any
    client: Recorder
    workspace: Path

    async def new_session(self) -> str:
        response = await self.conn.new_session(cwd=str(self.workspace), mcp_servers=[])
        return str(response.session_id)

    async def prompt(self, session_id: str, text: str = "go") -> Any:
        return await self.conn.prompt(session_id=session_id, prompt=[text_block(text)])


StartAcp = Callable[..., Awaitable[AcpPeer]]


@pytest_asyncio.fixture
async def start_acp(tmp_path: Path) -> AsyncIterator[StartAcp]:
    async with AsyncExitStack() as stack:

        async def start(
            turns: list[Any],
            decide: Decide | None = None,
            options: dict[str, Any] | None = None,
        ) -> AcpPeer:
            workspace = tmp_path / "ws"
            workspace.mkdir(exist_ok=True)
            script = tmp_path / "script.json"
            script.write_text(json.dumps({"turns": turns}), encoding="utf-8")
            client = Recorder() if decide is None else Recorder(decide)
            env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
            argv = ("-P", "-m", "server", "acp", "--backend", "scripted", "--script", str(script))
            conn, process = await stack.enter_async_context(
                spawn_agent_process(
                    client, sys.executable, *argv, "--log-level", "WARNING", env=env
                )
            )
            # Keyword arguments are the request's _meta: _meta.gatehouse holds the options.
            await conn.initialize(
                protocol_version=PROTOCOL_VERSION,
                client_capabilities=ClientCapabilities(),
                client_info=Implementation(name="pytest", version="0"),
                **({"gatehouse": options} if options else {}),
            )
            return AcpPeer(conn, process, client, workspace)

        yield start
