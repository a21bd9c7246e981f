"""The agent service in process: what a user notices around model loading and rejections."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from engine.backends.base import Backend
from sandbox.tiers import unsandboxed
from server.options import ServerOptions
from server.protocol import CancelParams, ChatParams
from server.service import AgentService, ClientFeatures


class _Channel:
    def send_request(self, method: str, params: Any = None, *, msg_id: str) -> Any:
        raise AssertionError("no approvals expected")

    def withdraw_request(self, msg_id: str) -> None:
        pass


def _service(tmp_path: Path) -> tuple[AgentService, list[dict[str, Any]]]:
    sent: list[dict[str, Any]] = []
    service = AgentService(
        _Channel(), sent.append, options=ServerOptions(backend="scripted"), workspace=tmp_path
    )
    service.configure(
        ServerOptions(backend="scripted"),
        tmp_path,
        ClientFeatures(tool_confirm=True),
        unsandboxed(),
    )
    return service, sent


async def test_cancel_while_the_model_loads_returns_a_cancelled_turn(tmp_path: Path) -> None:
    service, _sent = _service(tmp_path)
    loading = asyncio.Event()

    async def slow_ensure(model: str | None, progress: Any) -> Backend:
        loading.set()
        await asyncio.sleep(60)
        raise AssertionError("unreachable")

    service.models.ensure = slow_ensure  # type: ignore[method-assign]
    chat = asyncio.create_task(service.chat(ChatParams(prompt="hi")))
    await loading.wait()
    session_id = service.sessions.all()[0].session_id
    assert service.cancel(CancelParams(session_id=session_id)).cancelled is True
    result = await asyncio.wait_for(chat, 5)
    assert result.stop_reason == "cancelled" and result.text == ""
    assert service.sessions.all()[0].busy is False


async def test_a_refused_model_switch_creates_no_session(tmp_path: Path) -> None:
    service, _sent = _service(tmp_path)
    service.options = ServerOptions(backend="llama_cpp")
    service.models.options = service.options
    try:
        await service.chat(ChatParams(prompt="hi", model=str(tmp_path / "missing.gguf")))
    except Exception as exc:
        assert "missing.gguf" in str(exc)
    else:
        raise AssertionError("expected a refusal")
    assert service.sessions.all() == []
