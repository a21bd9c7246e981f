"""What :mod:`server.options` generates for people and for VS Code: the options tables in
``docs/protocol.md`` and ``README.md`` (between ``<!-- options:begin -->`` and
``<!-- options:end -->``) and the ``gatehouse.*`` option settings in ``vscode-client/package.json``.

Run ``python -m server.protocol.schema`` to regenerate; a test fails on any drift.
"""

from __future__ import annotations

import json
import re
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic.alias_generators import to_camel
from pydantic.fields import FieldInfo

from server.options import GROUPS, ServerOptions

BEGIN, END = "<!-- options:begin -->", "<!-- options:end -->"
VSCODE_PREFIX = "gatehouse."
_VSCODE_NOTES: dict[str, str] = {
    "model": " Models from Ollama, LM Studio and the Hugging Face cache are listed too; "
    '"Gatehouse: Select Model" picks one. A path starting with ./ is relative to the first '
    "workspace folder; ~ and ${workspaceFolder} are expanded.",
    "script": " A relative path is taken from the first workspace folder.",
    "bypassPermissions": " DANGEROUS: turning it on asks for confirmation first.",
}
_PATTERN_ERRORS: dict[str, str] = {
    "openai.apiKeyEnv": "The NAME of an environment variable, not the key itself.",
}


def option_fields() -> Iterator[tuple[str, FieldInfo]]:
    """Every leaf option as (wire key, field): ``backend``, ..., ``sandbox.minLevel``."""
    for name, info in ServerOptions.model_fields.items():
        key = to_camel(name)
        if key in GROUPS:
            group: type[BaseModel] = GROUPS[key]
            for sub, sub_info in group.model_fields.items():
                yield f"{key}.{to_camel(sub)}", sub_info
        else:
            yield key, info


def _extra(info: FieldInfo) -> dict[str, Any]:
    extra = info.json_schema_extra
    return extra if isinstance(extra, dict) else {}


def _constraints(info: FieldInfo) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for meta in info.metadata:
        for attr in ("ge", "gt", "le", "min_length", "pattern"):
            value = getattr(meta, attr, None)
            if value is not None:
                found[attr] = value
    return found


def _base_type(info: FieldInfo) -> tuple[Any, bool]:
    """The annotation without ``None``, and whether ``None`` is allowed."""
    args = typing.get_args(info.annotation)
    if type(None) in args:
        rest = [a for a in args if a is not type(None)]
        return rest[0], True
    return info.annotation, False


def _choices(kind: Any) -> tuple[str, ...]:
    return typing.get_args(kind) if typing.get_origin(kind) is typing.Literal else ()


def _type_text(info: FieldInfo) -> str:
    kind, _nullable = _base_type(info)
    limits = _constraints(info)
    if _choices(kind):
        return "string"
    if kind is bool:
        return "bool"
    if kind is int:
        return f"int ≥ {limits['ge']}" if "ge" in limits else "int"
    if kind is float:
        return f"number > {limits['gt']:g}" if "gt" in limits else "number"
    return "string"


def _default_text(key: str, info: FieldInfo) -> str:
    if info.default is None:
        return {
            "model": "the embedded model",
            "threads": "llama.cpp's",
            "toolGrammar": "the model's",
        }.get(key, "none")
    return f"`{json.dumps(info.default)}`"


def _meaning(info: FieldInfo) -> str:
    kind, _ = _base_type(info)
    text = info.description or ""
    choices = _choices(kind)
    if choices:
        text += " One of " + ", ".join(f"`{c}`" for c in choices) + "."
    return text


def protocol_table() -> str:
    rows = ["| option | type | default | meaning |", "|---|---|---|---|"]
    for key, info in option_fields():
        default = _default_text(key, info)
        rows.append(f"| `{key}` | {_type_text(info)} | {default} | {_meaning(info)} |")
    return "\n".join(rows)


def readme_table() -> str:
    rows = ["| key | default | meaning |", "|---|---|---|"]
    for key, info in option_fields():
        meaning = _meaning(info)
        if _extra(info).get("x-cli"):
            flag = "--" + re.sub(r"([A-Z])", r"-\1", key).lower()
            meaning += f" (`{flag}`)"
        rows.append(f"| `{key}` | {_default_text(key, info)} | {meaning} |")
    return "\n".join(rows)


def vscode_default(info: FieldInfo) -> Any:
    """The VS Code setting's default: an unset text option is ``""``, an unset number ``null``."""
    kind, _ = _base_type(info)
    if info.default is None:
        return "" if kind is str else None
    return info.default


def vscode_property(key: str, info: FieldInfo) -> dict[str, Any]:
    kind, nullable = _base_type(info)
    limits = _constraints(info)
    extra = _extra(info)
    prop: dict[str, Any] = {}
    choices = _choices(kind)
    if choices:
        prop["type"] = "string"
        prop["enum"] = list(choices)
    elif kind is bool:
        prop["type"] = "boolean"
    elif kind is int:
        prop["type"] = ["integer", "null"] if nullable else "integer"
    elif kind is float:
        prop["type"] = "number"
    else:
        prop["type"] = "string"
    prop["default"] = vscode_default(info)
    if "ge" in limits:
        prop["minimum"] = limits["ge"]
    if "gt" in limits:
        prop["exclusiveMinimum"] = limits["gt"]
    if "le" in limits:
        prop["maximum"] = limits["le"]
    if "pattern" in limits:
        prop["pattern"] = "^(|" + limits["pattern"].strip("^$") + ")$"  # empty: unset
        prop["patternErrorMessage"] = _PATTERN_ERRORS.get(key, "Not a valid value.")
    scope = extra.get("x-vscode-scope", "machine-overridable")
    prop["scope"] = scope
    description = (info.description or "") + _VSCODE_NOTES.get(key, "")
    if scope == "machine":
        description += " User settings only: a workspace cannot change it."
    prop["description"] = description
    if extra.get("x-enum-descriptions"):
        prop["enumDescriptions"] = extra["x-enum-descriptions"]
    return prop


def _replace_between(text: str, body: str, where: Path) -> str:
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        raise ValueError(f"{where} has no {BEGIN} ... {END} block")
    return text[: start + len(BEGIN)] + "\n" + body + "\n" + text[end:]


def _package_json(path: Path) -> str:
    package = json.loads(path.read_text(encoding="utf-8"))
    configuration = package["contributes"]["configuration"]
    old: dict[str, Any] = configuration["properties"]
    generated = {VSCODE_PREFIX + key: vscode_property(key, info) for key, info in option_fields()}
    others = {k: v for k, v in old.items() if k.removeprefix(VSCODE_PREFIX) not in _option_keys()}
    configuration["properties"] = {**generated, **others}
    return json.dumps(package, indent=2, ensure_ascii=False) + "\n"


def _option_keys() -> set[str]:
    return {key for key, _info in option_fields()}


def generated_files(root: Path) -> dict[Path, str]:
    """The files this module generates and the text each must hold."""
    protocol = root / "docs" / "protocol.md"
    readme = root / "README.md"
    package = root / "vscode-client" / "package.json"
    protocol_text = protocol.read_text(encoding="utf-8")
    return {
        protocol: _replace_between(protocol_text, protocol_table(), protocol),
        readme: _replace_between(readme.read_text(encoding="utf-8"), readme_table(), readme),
        package: _package_json(package),
    }
