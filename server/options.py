"""Server settings: ``initializationOptions``, checked field by field.

An invalid option never stops the server: it is replaced by its default and reported to the user
(``window/showMessage``), the way jedi-language-server treats configuration.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from sandbox.policy import LEVELS, is_level

KNOWN_BACKENDS: tuple[str, ...] = ("llama_cpp", "transformers", "openai", "scripted")


@dataclass(frozen=True)
class ServerOptions:
    backend: str = "llama_cpp"
    model: str | None = None
    script: str | None = None
    threads: int | None = None
    context_size: int = 4096
    tool_grammar: bool | None = None
    """None: the model's default (on for small models, see engine.models.defaults)."""
    model_defaults: bool = True
    openai_base_url: str | None = None
    openai_model: str | None = None
    openai_api_key_env: str | None = None
    confirm_tool_calls: bool = False
    confirm_code_execution: bool = True
    bypass_permissions: bool = False
    confirm_timeout_seconds: float = 300.0
    tool_timeout_seconds: float = 120.0
    sandbox_network: bool = False
    sandbox_min_level: str = "standard"


_WIRE_NAMES: dict[str, str] = {
    "backend": "backend",
    "model": "model",
    "script": "script",
    "threads": "threads",
    "contextSize": "context_size",
    "toolGrammar": "tool_grammar",
    "modelDefaults": "model_defaults",
    "openai.baseUrl": "openai_base_url",
    "openai.model": "openai_model",
    "openai.apiKeyEnv": "openai_api_key_env",
    "confirmToolCalls": "confirm_tool_calls",
    "confirmCodeExecution": "confirm_code_execution",
    "bypassPermissions": "bypass_permissions",
    "confirmTimeoutSeconds": "confirm_timeout_seconds",
    "toolTimeoutSeconds": "tool_timeout_seconds",
    "sandbox.network": "sandbox_network",
    "sandbox.minLevel": "sandbox_min_level",
}


_GROUPS = ("sandbox", "openai")


def _check(name: str, value: Any) -> str | None:
    """Why ``value`` is not valid for option ``name`` (None when it is)."""
    default = getattr(ServerOptions(), name)
    if name == "backend":
        if value not in KNOWN_BACKENDS:
            return f"must be one of {', '.join(KNOWN_BACKENDS)}"
    elif name in ("threads", "context_size"):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            return "must be a whole number >= 1"
        if name == "context_size" and value < 512:
            return "must be at least 512 tokens"
    elif name == "openai_api_key_env":
        if not isinstance(value, str) or not value.replace("_", "").isalnum():
            return "must be the NAME of an environment variable (the key itself never goes here)"
    elif name == "tool_grammar":
        if not isinstance(value, bool) and value is not None:
            return "must be true, false or null (the model's default)"
    elif name == "sandbox_min_level":
        if not is_level(value):
            return f"must be one of {', '.join(LEVELS)}"
    elif isinstance(default, bool):
        if not isinstance(value, bool):
            return "must be true or false"
    elif isinstance(default, float):
        if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
            return "must be a number of seconds > 0"
        if value > 86_400:
            return "must be at most 86400 seconds"
    elif value is not None and (not isinstance(value, str) or not value):
        return "must be a non-empty string"
    return None


def parse_options(raw: Any, base: ServerOptions | None = None) -> tuple[ServerOptions, list[str]]:
    """Apply ``initializationOptions`` over ``base``; return the options and the problems found."""
    options = base or ServerOptions()
    if raw is None:
        return options, []
    if not isinstance(raw, dict):
        return options, ["initializationOptions must be an object; using the defaults"]
    problems: list[str] = []
    changes: dict[str, Any] = {}
    items = [(k, v) for k, v in raw.items() if k not in _GROUPS]
    for group in _GROUPS:
        nested = raw.get(group)
        if isinstance(nested, dict):
            items += [(f"{group}.{k}", v) for k, v in nested.items()]
        elif group in raw:
            problems.append(f"{group} must be an object; using the defaults")
    for key, value in items:
        name = _WIRE_NAMES.get(key)
        if name is None:
            problems.append(f"unknown option {key!r} ignored")
            continue
        why = _check(name, value)
        if why is not None:
            default = getattr(options, name)
            problems.append(f"{key} {why}; using {default!r}")
            continue
        changes[name] = float(value) if isinstance(getattr(options, name), float) else value
    return replace(options, **changes), problems
