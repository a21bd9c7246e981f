"""The wire contract kept in one place: the published schema and the generated docs and VS Code
settings are up to date, every message validates against it, the method table names the clients
that really use each method, and the terminal client speaks only the wire."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from typing import Any

import pytest

from server.options import ServerOptions
from server.options_docs import VSCODE_PREFIX, option_fields, vscode_default
from server.protocol import METHODS
from server.protocol.display import HIDDEN_RANGES, hidden_characters, visible
from server.protocol.schema import DISPLAY_FILE, ROOT, SCHEMA_FILE, build_schema, stale_files

VSCODE_SRC = ROOT / "vscode-client" / "src"


def test_the_published_schema_and_everything_generated_from_the_models_is_up_to_date() -> None:
    stale = [str(p.relative_to(ROOT)) for p in stale_files()]
    assert stale == [], f"run `python -m server.protocol.schema`; stale: {stale}"


def test_the_schema_describes_every_method_with_its_models() -> None:
    schema = json.loads(SCHEMA_FILE.read_text())
    assert set(schema["methods"]) == {m.name for m in METHODS}
    defs = schema["$defs"]
    for entry in schema["methods"].values():
        for part in ("params", "result"):
            if part in entry:
                assert entry[part]["$ref"].removeprefix("#/$defs/") in defs
    assert schema == build_schema()


def _sources(client: str) -> str:
    if client == "vscode":
        return "\n".join(p.read_text() for p in VSCODE_SRC.glob("*.ts") if p.name != "protocol.ts")
    if client == "neovim":
        return "\n".join(p.read_text() for p in (ROOT / "editors" / "neovim").rglob("*.lua"))
    if client == "emacs":
        return "\n".join(p.read_text() for p in (ROOT / "editors" / "emacs").glob("*.el"))
    return "\n".join(p.read_text() for p in (ROOT / "harness").glob("*.py"))


def _vscode_key(method: str) -> str | None:
    table = (VSCODE_SRC / "protocol.ts").read_text()
    found = re.search(rf"(\w+): '{re.escape(method)}'", table)
    return found.group(1) if found else None


def _python_constant(method: str) -> str:
    from server import protocol

    for name in dir(protocol):
        if name.isupper() and getattr(protocol, name) == method:
            return name
    raise AssertionError(f"server.protocol has no constant for {method}")


@pytest.mark.parametrize("method", METHODS, ids=lambda m: m.name)
@pytest.mark.parametrize("client", ["vscode", "chat", "neovim", "emacs"])
def test_the_method_table_names_exactly_the_clients_that_use_each_method(
    method: Any, client: str
) -> None:
    source = _sources(client)
    if client == "vscode":
        key = _vscode_key(method.name)
        used = key is not None and f"Methods.{key}" in source
    elif client == "neovim":  # a Lua string: "agent/chat"
        used = f'"{method.name}"' in source
    elif client == "emacs":  # a keyword (:agent/chat) or a symbol ((eql agent/stream))
        used = re.search(rf"[:(\s]{re.escape(method.name)}[)\s]", source) is not None
    else:
        used = re.search(rf"\b{_python_constant(method.name)}\b", source) is not None
    assert used == (client in method.clients), (
        f"{method.name}: METHODS says clients={method.clients}, but {client} "
        f"{'uses' if used else 'does not use'} it"
    )


def test_vscode_settings_defaults_match_the_options_schema() -> None:
    settings_ts = (VSCODE_SRC / "settings.ts").read_text()
    declared = {
        key: json.loads(value.replace("'", '"'))
        for key, value in re.findall(r"^\s+\w+: \['([\w.]+)', (.+?)\],$", settings_ts, re.M)
    }
    package = json.loads((ROOT / "vscode-client" / "package.json").read_text())
    properties = package["contributes"]["configuration"]["properties"]
    for key, info in option_fields():
        assert key in declared, f"settings.ts DEFAULTS lacks {key}"
        assert declared[key] == vscode_default(info), key
        assert properties[VSCODE_PREFIX + key]["default"] == vscode_default(info), key


def test_every_option_is_documented_in_both_tables() -> None:
    for doc in (ROOT / "README.md", ROOT / "docs" / "protocol.md"):
        text = doc.read_text()
        for key, _info in option_fields():
            assert f"| `{key}` |" in text, f"{doc.name} lacks {key}"


def test_the_schema_defaults_are_the_server_defaults() -> None:
    defaults = json.loads(SCHEMA_FILE.read_text())["$defs"]["ServerOptions"]["properties"]
    assert defaults["confirmCodeExecution"]["default"] is True
    assert ServerOptions().confirm_code_execution is True


def test_the_display_vectors_match_the_display_rule() -> None:
    vectors = json.loads(DISPLAY_FILE.read_text())
    assert [tuple(r) for r in vectors["ranges"]] == list(HIDDEN_RANGES)
    for case in vectors["cases"]:
        assert visible(case["input"]) == case["visible"]
        assert hidden_characters(case["input"]) == case["hidden"]
        for low, high in HIDDEN_RANGES:
            for code in (low, high):
                assert chr(code) not in case["visible"]


def test_the_terminal_client_loads_no_engine_sandbox_or_server_runtime() -> None:
    probe = (
        "import sys, harness.chat\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('engine', 'sandbox', 'server', 'pygls', 'lsprotocol')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    loaded = set(json.loads(out.replace("'", '"')))
    # Only the contract: the protocol models and the literal modules they are built from.
    allowed_prefixes = ("server.protocol",)
    allowed = {"engine", "engine.events", "engine.approvals", "engine.gate", "engine.edits",
               "engine.models", "engine.models.entry", "engine.rules", "engine.rules.kinds",
               "engine.memory", "engine.memory.kinds", "sandbox", "sandbox.info",
               "server"}  # fmt: skip
    extra = {m for m in loaded if m not in allowed and not m.startswith(allowed_prefixes)}
    assert extra == set()
    for path in (ROOT / "harness").glob("*.py"):
        assert not re.search(r"^\s*(from|import) (engine|sandbox)\b", path.read_text(), re.M), path
