"""The server's settings: one pydantic schema for ``initializationOptions``, the ``gatehouse
serve`` flags, the options tables in ``docs/protocol.md`` and ``README.md`` and the VS Code
settings (``python -m server.options_docs`` regenerates the tables and ``package.json``; tests
fail on any drift).

An invalid option never stops the server: it is replaced by its default and reported to the user
(``window/showMessage``), field by field, the way jedi-language-server treats configuration.
"""

from __future__ import annotations

import copy
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

from sandbox.info import IsolationLevel

Backend = Literal["llama_cpp", "transformers", "openai", "scripted"]
KNOWN_BACKENDS: tuple[str, ...] = ("llama_cpp", "transformers", "openai", "scripted")
VSCodeScope = Literal["machine", "machine-overridable", "window"]


def setting(
    default: Any,
    description: str,
    *,
    scope: VSCodeScope = "machine-overridable",
    cli: bool = False,
    enum_descriptions: list[str] | None = None,
    **constraints: Any,
) -> Any:
    """A field of the options schema. ``scope`` is the VS Code setting's scope (``machine``: user
    settings only, never a workspace's); ``cli``: also a ``gatehouse serve`` flag."""
    extra: dict[str, Any] = {"x-vscode-scope": scope, "x-cli": cli}
    if enum_descriptions:
        extra["x-enum-descriptions"] = enum_descriptions
    return Field(default, description=description, json_schema_extra=extra, **constraints)


class _Options(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        frozen=True,
        extra="forbid",
        strict=True,
        defer_build=True,
    )


class SandboxOptions(_Options):
    """``sandbox``: how approved code is confined."""

    network: bool = setting(
        False,
        "Let approved code reach the network (approval prompts say when it is on).",
        scope="machine",
    )
    min_level: IsolationLevel = setting(
        "standard",
        "Refuse code execution on machines with weaker isolation (see docs/security.md).",
        scope="machine",
        enum_descriptions=[
            "Only run code in full namespaces (bubblewrap).",
            "Require at least Landlock + seccomp confinement (the default).",
            "Allow runs with resource limits only, without file system confinement.",
            "Allow running code with no isolation at all.",
        ],
    )


class OpenAIOptions(_Options):
    """``openai``: the server to use with ``backend: "openai"``."""

    base_url: str | None = setting(
        None,
        "The server's base URL, e.g. http://localhost:8000/v1 (your API key is sent there).",
        scope="machine",
        min_length=1,
    )
    model: str | None = setting(None, "The model name the server knows.", min_length=1)
    api_key_env: str | None = setting(
        None,
        "The NAME of the environment variable holding the API key (the key itself never goes "
        "into settings, logs or the wire).",
        scope="machine",
        pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
    )


class MemoryOptions(_Options):
    """``memory``: what the server keeps in the data folder (the audit log is always kept)."""

    sessions: bool = setting(
        True,
        "Save conversations in the data folder so they survive a restart (agent/sessions).",
        scope="machine",
    )
    checkpoints: bool = setting(
        True,
        "Take a checkpoint of the workspace before the first command or edit of each turn "
        "(agent/changes, agent/rewind).",
        scope="machine",
    )
    checkpoint_max_file_bytes: int = setting(
        10 << 20,
        "Files larger than this are not captured by checkpoints (the turn's status names them).",
        scope="machine",
        ge=0,
    )


class ServerOptions(_Options):
    """``initializationOptions``: every field is optional; a missing one takes its default."""

    backend: Backend = setting(
        "llama_cpp",
        "The engine that runs the model.",
        scope="machine",
        cli=True,
        enum_descriptions=[
            "A GGUF model in the server process with llama.cpp (the default; the embedded "
            "SmolLM2-135M needs nothing else).",
            "A safetensors folder or GGUF file through PyTorch and transformers "
            "(pip install torch==2.13.0 '.[transformers]').",
            "Any OpenAI-compatible server (vLLM, llama.cpp's server, Ollama, TGI): set "
            "openai.baseUrl, openai.model and openai.apiKeyEnv.",
            "A scripted model for tests and demos: set script.",
        ],
    )
    model: str | None = setting(
        None,
        "The model to load: a .gguf file, a safetensors folder, or a name from `gatehouse "
        "models` (default: the embedded model). For openai, the server's model name.",
        scope="machine",
        cli=True,
        min_length=1,
    )
    script: str | None = setting(
        None,
        "The scripted backend's script: a JSON file (see docs/protocol.md, 'The scripted "
        "backend').",
        scope="machine",
        cli=True,
        min_length=1,
    )
    threads: int | None = setting(
        None, "CPU threads for local models (default: llama.cpp's).", cli=True, ge=1
    )
    context_size: int = setting(
        4096,
        "The context window in tokens; older turns are left out (and you are told) when a "
        "conversation outgrows it.",
        ge=512,
    )
    tool_grammar: bool | None = setting(
        None,
        "llama.cpp: constrain the first model turn of each request to one valid tool call "
        "(helps small models). Unset: on for models of at most 1B parameters.",
        cli=True,
    )
    model_defaults: bool = setting(
        True,
        "Give models of at most 1B parameters (counted from the file) their defaults: "
        "toolGrammar on, enabledTools ['terminal'] when a request names none, one round of tool "
        "calls per request (the model then answers without tools), min_p 0.2. Explicit settings "
        "win.",
    )
    openai: OpenAIOptions = Field(default_factory=OpenAIOptions)
    confirm_tool_calls: bool = setting(
        False, "Ask before every tool call, including reading and listing files.", scope="machine"
    )
    confirm_code_execution: bool = setting(
        True, "Ask before every python and terminal call.", scope="machine"
    )
    confirm_file_edits: bool = setting(
        True,
        "Ask before every edit_file, write_file and apply_patch call, showing the diff (edits of "
        "auto-run paths such as .git or .vscode are asked about even when this is off).",
        scope="machine",
    )
    bypass_permissions: bool = setting(
        False,
        "Ask nothing and run tool calls without the sandbox (secrets are still stripped from the "
        "environment). Wins over every confirm flag.",
        scope="machine",
    )
    confirm_timeout_seconds: float = setting(
        300.0,
        "Seconds an approval may stay unanswered; then the call is not run (timed_out) and the "
        "prompt is withdrawn.",
        gt=0,
        le=86_400,
        allow_inf_nan=False,
    )
    tool_timeout_seconds: float = setting(
        120.0,
        "Wall-clock limit in seconds of one python or terminal call; its whole process tree is "
        "killed past it.",
        gt=0,
        le=86_400,
        allow_inf_nan=False,
    )
    sandbox: SandboxOptions = Field(default_factory=SandboxOptions)
    memory: MemoryOptions = Field(default_factory=MemoryOptions)


GROUPS: dict[str, type[_Options]] = {
    "openai": OpenAIOptions,
    "sandbox": SandboxOptions,
    "memory": MemoryOptions,
}
"""Nested option groups, by wire name."""


def _message(error: Any) -> str:
    if error["type"] == "extra_forbidden":
        return "is not a known option"
    if error["type"] == "bool_type":
        return "must be true or false"
    return str(error["msg"]).replace("Input should", "should")


def parse_options(raw: Any, base: ServerOptions | None = None) -> tuple[ServerOptions, list[str]]:
    """Apply ``initializationOptions`` over ``base``, field by field; return the options and the
    problems found (each bad field keeps the value it had, and is named in a problem)."""
    options = base or ServerOptions()
    if raw is None or raw == []:  # an empty Lua table is encoded as []
        return options, []
    if not isinstance(raw, dict):
        return options, ["initializationOptions must be an object; using the defaults"]
    problems: list[str] = []
    current: dict[str, Any] = options.model_dump(by_alias=True)
    items: list[tuple[tuple[str, ...], Any]] = []
    for key, value in raw.items():
        if key in GROUPS:
            if isinstance(value, dict):
                items += [((key, sub), v) for sub, v in value.items()]
            else:
                problems.append(f"{key} must be an object; using the defaults")
        else:
            items.append(((key,), value))
    for path, value in items:
        trial = copy.deepcopy(current)
        target = trial
        for part in path[:-1]:
            target = target[part]
        target[path[-1]] = value
        name = ".".join(path)
        try:
            ServerOptions.model_validate(trial)
        except ValidationError as exc:
            error = exc.errors()[0]
            if error["type"] == "extra_forbidden":
                problems.append(f"unknown option {name!r} ignored")
            else:
                kept = current.get(path[0]) if len(path) == 1 else current[path[0]].get(path[1])
                problems.append(f"{name} {_message(error)}; using {kept!r}")
            continue
        current = trial
    return ServerOptions.model_validate(current), problems


def cli_options() -> list[tuple[str, str, Any]]:
    """The options that are also ``gatehouse serve`` flags: (field name, wire key, field info).
    The flag is ``--`` + the field name with dashes (``tool_grammar`` -> ``--tool-grammar``)."""
    found = []
    for name, info in ServerOptions.model_fields.items():
        extra = info.json_schema_extra
        if isinstance(extra, dict) and extra.get("x-cli"):
            found.append((name, to_camel(name), info))
    return found


def settings_section(settings: Any) -> dict[str, Any] | None:
    """The Gatehouse part of ``workspace/didChangeConfiguration``'s ``settings``: its
    ``gatehouse`` object when there is one, else the object itself when it holds at least one
    Gatehouse option (eglot sends its whole workspace configuration), else None (nothing for us:
    other servers' settings are not reported as unknown options)."""
    if not isinstance(settings, dict):
        return None
    section = settings.get("gatehouse")
    if isinstance(section, dict):
        return section
    known = {info.alias or to_camel(name) for name, info in ServerOptions.model_fields.items()}
    return settings if known & set(settings) else None


BACKEND_FIELDS: tuple[str, ...] = (
    "backend",
    "model",
    "script",
    "threads",
    "context_size",
    "tool_grammar",
    "model_defaults",
    "openai",
)
"""The options a loaded model was made with: when one changes, the model is made again."""
