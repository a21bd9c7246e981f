"""initializationOptions: an editor's settings are applied when valid, and a bad one never stops the
server: it is replaced by its (safe) default and reported by name."""

from __future__ import annotations

from typing import Any

import pytest

from server.options import ServerOptions, parse_options


def test_no_options_give_the_safe_defaults() -> None:
    options, problems = parse_options(None)
    assert problems == []
    assert options.confirm_code_execution is True
    assert options.confirm_tool_calls is False
    assert options.bypass_permissions is False
    assert options.confirm_timeout_seconds == 300.0
    assert options.tool_timeout_seconds == 120.0
    assert options.backend == "llama_cpp"  # the embedded model, nothing to download
    assert options.model is None
    assert options.sandbox.network is False
    assert options.sandbox.min_level == "standard"
    assert options.script is None


def test_empty_options_object_gives_the_defaults_without_complaint() -> None:
    assert parse_options({}) == (ServerOptions(), [])


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("confirmCodeExecution", "false"),
        ("confirmCodeExecution", 0),
        ("confirmCodeExecution", None),
        ("confirmToolCalls", "true"),
        ("confirmToolCalls", 1),
        ("bypassPermissions", "true"),
        ("bypassPermissions", 1),
        ("bypassPermissions", [True]),
        ("confirmTimeoutSeconds", -5),
        ("confirmTimeoutSeconds", 0),
        ("confirmTimeoutSeconds", "300"),
        ("confirmTimeoutSeconds", True),
        ("confirmTimeoutSeconds", 10**9),
        ("toolTimeoutSeconds", -0.5),
        ("toolTimeoutSeconds", None),
        ("toolTimeoutSeconds", float("nan")),
        ("backend", "llama.cpp"),
        ("backend", None),
        ("backend", ["scripted"]),
        ("model", ""),
        ("model", 7),
        ("script", {"path": "demo.json"}),
    ],
)
def test_invalid_option_is_replaced_by_its_default_and_reported_by_name(
    key: str, value: Any
) -> None:
    options, problems = parse_options({key: value})
    assert options == ServerOptions()
    assert len(problems) == 1
    assert key in problems[0]


def test_bad_value_does_not_disturb_the_valid_options_next_to_it() -> None:
    options, problems = parse_options(
        {"confirmToolCalls": True, "toolTimeoutSeconds": -1, "confirmTimeoutSeconds": 30}
    )
    assert options.confirm_tool_calls is True
    assert options.confirm_timeout_seconds == 30.0
    assert options.tool_timeout_seconds == 120.0
    assert len(problems) == 1
    assert "toolTimeoutSeconds" in problems[0]


def test_an_empty_list_is_no_options_as_neovim_sends_an_empty_lua_table() -> None:
    assert parse_options([]) == (ServerOptions(), [])


@pytest.mark.parametrize("raw", [["confirmToolCalls"], "bypassPermissions", 3, True])
def test_options_that_are_not_an_object_give_the_defaults_and_a_report(raw: Any) -> None:
    options, problems = parse_options(raw)
    assert options == ServerOptions()
    assert len(problems) == 1
    assert "initializationOptions" in problems[0]


def test_misspelt_safety_flag_is_reported_and_the_safe_default_stays() -> None:
    options, problems = parse_options({"confirmCodeExecutions": False, "bypass": True})
    assert options == ServerOptions()
    assert options.confirm_code_execution is True
    assert options.bypass_permissions is False
    assert len(problems) == 2
    assert any("confirmCodeExecutions" in p for p in problems)
    assert any("'bypass'" in p for p in problems)


def test_valid_options_are_applied() -> None:
    options, problems = parse_options(
        {
            "backend": "scripted",
            "model": "tiny",
            "script": "/tmp/demo.json",
            "confirmToolCalls": True,
            "confirmCodeExecution": False,
            "bypassPermissions": True,
            "confirmTimeoutSeconds": 30,
            "toolTimeoutSeconds": 2.5,
        }
    )
    assert problems == []
    assert options == ServerOptions(
        backend="scripted",
        model="tiny",
        script="/tmp/demo.json",
        confirm_tool_calls=True,
        confirm_code_execution=False,
        bypass_permissions=True,
        confirm_timeout_seconds=30.0,
        tool_timeout_seconds=2.5,
    )
    assert isinstance(options.confirm_timeout_seconds, float)


def test_explicit_null_model_and_script_are_accepted() -> None:
    assert parse_options({"model": None, "script": None}) == (ServerOptions(), [])


def test_nested_groups_are_checked_field_by_field() -> None:
    options, problems = parse_options(
        {"sandbox": {"network": True, "minLevel": "bogus"}, "openai": {"apiKeyEnv": "sk-123 x"}}
    )
    assert options.sandbox.network is True
    assert options.sandbox.min_level == "standard"
    assert options.openai.api_key_env is None
    assert len(problems) == 2
    assert any(p.startswith("sandbox.minLevel") for p in problems)
    assert any(p.startswith("openai.apiKeyEnv") for p in problems)


@pytest.mark.parametrize("group", ["sandbox", "openai"])
def test_a_group_that_is_not_an_object_keeps_its_defaults(group: str) -> None:
    options, problems = parse_options({group: True})
    assert options == ServerOptions()
    assert problems == [f"{group} must be an object; using the defaults"]


def test_flags_win_over_initialization_options() -> None:
    from_editor, _ = parse_options({"backend": "openai", "toolGrammar": False})
    options, problems = parse_options({"backend": "scripted", "toolGrammar": True}, from_editor)
    assert problems == []
    assert options.backend == "scripted"
    assert options.tool_grammar is True
