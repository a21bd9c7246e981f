"""The published contract, generated from the models: ``python -m server.protocol.schema``.

Writes (``--write``, the default) or checks (``--check``: exit 1 naming every stale file):

- ``docs/schema/gatehouse.schema.json``: a JSON Schema of every message in :data:`METHODS`, the
  ``initializationOptions``, the ``initialize`` capabilities and the ``data`` of every error. The
  VS Code client's TypeScript types are generated from it (``npm run generate:protocol`` in
  ``vscode-client/``), and any later client (Lua, the ACP mapping) reads the same file;
- ``docs/schema/display-safety.json``: the display rule's code point ranges and test strings,
  which every client's implementation is tested against;
- the options tables in ``docs/protocol.md`` and ``README.md`` and the ``gatehouse.*`` option
  settings in ``vscode-client/package.json`` (:mod:`server.options_docs`).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from engine import __version__
from server.options import ServerOptions
from server.options_docs import generated_files as option_files
from server.protocol import AGENT_STREAM, ERROR_CODES, METHODS, GatehouseCapabilities
from server.protocol.display import HIDDEN_RANGES, hidden_characters, visible
from server.protocol.errors import ErrorData

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_FILE = ROOT / "docs" / "schema" / "gatehouse.schema.json"
DISPLAY_FILE = ROOT / "docs" / "schema" / "display-safety.json"
_REF = "#/$defs/{model}"
_UNION_NAMES = {AGENT_STREAM: "StreamEvent"}
"""The names in the schema of params that are unions rather than models."""


def _tidy(schema: dict[str, Any], *, sent_by_server: bool) -> None:
    """What pydantic writes, made exact for the wire and for code generators: no per-property
    titles (generators would turn each into a named type); a ``type`` constant is required; and
    in messages the server sends, a field left out when empty is optional, never ``null``."""
    if "description" in schema:
        schema["description"] = schema["description"].replace("``", "`")
    properties: dict[str, Any] = schema.get("properties", {})
    required: list[str] = schema.setdefault("required", [])
    for name, prop in properties.items():
        prop.pop("title", None)
        if "const" in prop and name not in required:
            required.append(name)
            prop.pop("default", None)
        if sent_by_server and prop.get("default", 0) is None and name not in required:
            branches = [b for b in prop.pop("anyOf", []) if b != {"type": "null"}]
            del prop["default"]
            if len(branches) == 1:
                prop.update(branches[0])
            elif branches:
                prop["anyOf"] = branches
    if not required:
        del schema["required"]


def _add(defs: dict[str, Any], name: str, shape: Any, mode: str) -> dict[str, str]:
    """Put the schema of ``shape`` (a model or an annotated union) into ``defs``; its $ref."""
    schema = TypeAdapter(shape).json_schema(mode=mode, ref_template=_REF)  # type: ignore[arg-type]
    found = schema.pop("$defs", {})
    for definition in [*found.values(), schema]:
        _tidy(definition, sent_by_server=mode == "serialization")
    defs.update(found)
    if "$ref" in schema:
        return {"$ref": schema["$ref"]}
    schema.setdefault("title", name)
    defs[name] = schema
    return {"$ref": _REF.format(model=name)}


def build_schema() -> dict[str, Any]:
    defs: dict[str, Any] = {}
    methods: dict[str, Any] = {}
    for method in METHODS:
        from_client = method.direction == "client->server"
        entry: dict[str, Any] = {
            "kind": method.kind,
            "direction": method.direction,
            "summary": method.summary,
            "clients": list(method.clients),
        }
        if method.params is not None:
            params = method.params
            name = params.__name__ if isinstance(params, type) else _UNION_NAMES[method.name]
            mode = "validation" if from_client else "serialization"
            entry["params"] = _add(defs, name, method.params, mode)
        if method.result is not None:
            mode = "serialization" if from_client else "validation"
            entry["result"] = _add(defs, method.result.__name__, method.result, mode)
        methods[method.name] = entry
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "The Gatehouse wire protocol",
        "description": (
            "Generated from server/protocol by `python -m server.protocol.schema`: do not edit. "
            "docs/protocol.md describes the same contract for people."
        ),
        "version": __version__,
        "methods": methods,
        "initializationOptions": _add(defs, "ServerOptions", ServerOptions, "validation"),
        "capabilities": {
            "description": "capabilities.experimental.gatehouse in the initialize result",
            **_add(defs, "GatehouseCapabilities", GatehouseCapabilities, "serialization"),
        },
        "errors": {
            "codes": {str(code): meaning for code, meaning in ERROR_CODES.items()},
            "data": _add(defs, "ErrorData", ErrorData, "serialization"),
        },
        "$defs": dict(sorted(defs.items())),
    }


DISPLAY_CASES: tuple[str, ...] = (
    "plain text stays as it is",
    "touch hidden_ran.txt #\x1b[2K\x1b[1G  $ ls -la",
    "evil \u202egnp.exe",
    "an \u2066isolate\u2069 and \u2067another\u2069 and \u2068first strong\u2069",
    "zero\u200bwidth\u200cnon\u200djoiner\u2060word joiner\ufeffbom",
    "nul\x00bell\x07backspace\x08delete\x7f",
    "csi\x9b31m c1",
    "tags \U000e0041\U000e0042 hidden",
    "windows line\r\nends stay\r\n",
    "a lone\rcarriage return",
    "tabs\tand\nnewlines stay",
    "emoji 👍 and accents éü stay",
    "soft\u00adhyphen and line\u2028separator",
)
"""Strings every client's implementation of the display rule is tested with."""


def build_display_vectors() -> dict[str, Any]:
    return {
        "description": (
            "Generated by `python -m server.protocol.schema` from server/protocol/display.py: "
            "the code points that are never shown raw, and test strings with what a person must "
            "see. C0/C1 controls and DEL are shown as \\xNN, the rest as <U+XXXX>; tab and "
            "newline stay; CRLF is shown as a newline and a lone CR as \\x0d."
        ),
        "ranges": [[low, high] for low, high in HIDDEN_RANGES],
        "cases": [
            {"input": text, "visible": visible(text), "hidden": hidden_characters(text)}
            for text in DISPLAY_CASES
        ],
    }


def _json(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def generated_files() -> dict[Path, str]:
    """Every generated file and the text it must hold."""
    files = {
        SCHEMA_FILE: _json(build_schema()),
        DISPLAY_FILE: _json(build_display_vectors()),
    }
    files.update(option_files(ROOT))
    return files


def stale_files() -> list[Path]:
    return [
        path
        for path, text in generated_files().items()
        if not path.exists() or path.read_text(encoding="utf-8") != text
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m server.protocol.schema")
    parser.add_argument("--check", action="store_true", help="only check; exit 1 if stale")
    args = parser.parse_args(argv)
    if args.check:
        stale = stale_files()
        for path in stale:
            sys.stderr.write(f"stale: {path.relative_to(ROOT)}\n")
        if stale:
            sys.stderr.write("run: python -m server.protocol.schema\n")
        return 1 if stale else 0
    for path, text in generated_files().items():
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            sys.stderr.write(f"wrote {path.relative_to(ROOT)}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
