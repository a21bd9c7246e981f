"""The eglot recipe (editors/emacs/gatehouse-eglot.el, docs/editors.md) in batch Emacs with
Debian's eglot 1.9, which declares no window capability: it is asked with
window/showMessageRequest, RET on its pre-filled first action denies, Allow runs, and the
answer streams into the *gatehouse* buffer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.editors import REPO, docs_block, docs_home, home_env, require_tool

RECIPE = REPO / "editors" / "emacs" / "gatehouse-eglot.el"
SCENARIO = Path(__file__).with_name("emacs_scenario.el")
TOUCH = (
    "Let me check. <tool_call>"
    + json.dumps({"name": "terminal", "arguments": {"command": "echo ran > made.txt"}})
    + "</tool_call>"
)


def run_emacs(
    tmp_path: Path, turns: list[Any], answer: str, config: str | None = None
) -> dict[str, Any]:
    emacs = require_tool("emacs", "apt-get install emacs-nox elpa-eglot")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": turns}), encoding="utf-8")
    report = tmp_path / "report.json"
    command = [sys.executable, "-P", "-m", "server", "serve", "--backend", "scripted"]
    command += ["--script", str(script), "--log-level", "WARNING"]
    env = {
        **os.environ,
        "GATEHOUSE_COMMAND": json.dumps(command),
        "GATEHOUSE_WORKSPACE": str(workspace),
        "GATEHOUSE_REPORT": str(report),
        "GATEHOUSE_ANSWER": answer,
        "GATEHOUSE_PROMPT": "count the lines",
        "PYTHONPATH": str(REPO),
        "HOME": str(tmp_path),
        **({"GATEHOUSE_CONFIG": config} if config else {}),
    }
    done = subprocess.run(
        [emacs, "--batch", "-l", str(RECIPE), "-l", str(SCENARIO)],
        cwd=workspace,
        env=env,
        timeout=120,
        check=False,
        capture_output=True,
        text=True,
    )
    assert report.exists(), done.stderr[-3000:]
    result: dict[str, Any] = json.loads(report.read_text(encoding="utf-8"))
    result["workspace"] = workspace
    return result


def test_enter_on_the_prefilled_action_denies_and_nothing_runs(tmp_path: Path) -> None:
    result = run_emacs(tmp_path, [TOUCH, "Understood."], answer="default")

    assert result["finished"]
    asked = result["asked"][0]
    assert asked["initial"] == "Deny"  # what RET picks
    assert list(asked["choices"])[:2] == ["Deny", "Allow once"]
    assert "echo ran > made.txt" in asked["prompt"] and "isolation:" in asked["prompt"]
    assert not (result["workspace"] / "made.txt").exists()
    assert "[terminal denied]" in result["buffer"]
    assert "[end_turn]" in result["buffer"]


def test_allow_runs_and_the_answer_streams_into_the_buffer(tmp_path: Path) -> None:
    slow = {"text": "It wrote the file and then it said more words.", "chunkDelayMs": 100}
    result = run_emacs(tmp_path, [TOUCH, slow], answer="Allow once")

    assert (result["workspace"] / "made.txt").read_text() == "ran\n"
    assert "[terminal completed]" in result["buffer"]
    assert "It wrote the file and then it said more words." in result["buffer"]
    partial = [s for s in result["samples"] if "It wrote" in s and "more words." not in s]
    assert len(partial) >= 3  # it grew while the turn ran


def test_c_g_at_the_prompt_denies_at_once(tmp_path: Path) -> None:
    result = run_emacs(tmp_path, [TOUCH, "Understood."], answer="quit")

    assert result["finished"]  # not left waiting for confirmTimeoutSeconds (300 s)
    assert len(result["asked"]) == 1
    assert not (result["workspace"] / "made.txt").exists()
    assert "[terminal denied]" in result["buffer"]


def test_eglot_workspace_configuration_is_applied(tmp_path: Path) -> None:
    # eglot sends it with workspace/didChangeConfiguration; here: turn approvals off
    config = "(:gatehouse (:confirmCodeExecution :json-false))"
    result = run_emacs(tmp_path, [TOUCH, "Done."], answer="Deny", config=config)

    assert result["asked"] == []
    assert (result["workspace"] / "made.txt").read_text() == "ran\n"


def test_following_the_docs_enter_denies_allow_runs_and_the_answer_streams(
    tmp_path: Path,
) -> None:
    """docs/editors.md's Emacs section verbatim: its two lines are the user's init file, then
    M-x gatehouse-chat in the project; RET on the prompt denies, then Allow once runs."""
    emacs = require_tool("emacs", "apt-get install emacs-nox elpa-eglot")
    slow = {"text": "The first was not run, the second was.", "chunkDelayMs": 100}
    home = docs_home(tmp_path, [TOUCH, slow])  # each run starts its own server
    init = home / ".emacs.d" / "init.el"
    init.parent.mkdir()
    init.write_text(docs_block("Emacs", "elisp"), encoding="utf-8")
    results: list[dict[str, Any]] = []
    for answer in ("default", "Allow once"):
        report = tmp_path / f"report-{len(results)}.json"
        env = home_env(home) | {
            "GATEHOUSE_WORKSPACE": str(home / "project"),
            "GATEHOUSE_REPORT": str(report),
            "GATEHOUSE_ANSWER": answer,
            "GATEHOUSE_PROMPT": "count the lines",
        }
        done = subprocess.run(
            [emacs, "--batch", "-l", str(init), "-l", str(SCENARIO)],
            cwd=home / "project",
            env=env,
            timeout=120,
            check=False,
            capture_output=True,
            text=True,
        )
        assert report.exists(), done.stderr[-3000:]
        results.append(json.loads(report.read_text(encoding="utf-8")))
        if answer == "default":
            assert not (home / "project" / "made.txt").exists()
    denied, allowed = results

    assert denied["asked"][0]["initial"] == "Deny"
    assert "[terminal denied]" in denied["buffer"]
    assert allowed["asked"][0]["initial"] == "Deny"
    assert "[terminal completed]" in allowed["buffer"]
    assert (home / "project" / "made.txt").read_text() == "ran\n"
    assert "The first was not run, the second was." in allowed["buffer"]
    partial = [s for s in allowed["samples"] if "The first" in s and "second was." not in s]
    assert len(partial) >= 3  # it streamed
