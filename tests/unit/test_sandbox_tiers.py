"""The sandbox tiers as a user meets them: the level chosen, what is refused, what is launched."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from engine.backends.scripted import ScriptedBackend, ScriptedTurn
from engine.gate import GatePolicy
from engine.loop import AgentLoop, ApprovalOutcome, ApprovalRequest, Conversation, TurnRequest
from engine.tools import BUILTIN_TOOLS
from sandbox.box import Box
from sandbox.bwrap import bwrap_argv, reexposed_paths
from sandbox.guard import WorkspaceGuard
from sandbox.info import SandboxInfo
from sandbox.policy import SandboxSettings
from sandbox.probe import EarlyProbe, Place, probe
from sandbox.tiers import Sandbox
from server.doctor import render, report

linux_only = pytest.mark.skipif(sys.platform != "linux", reason="Linux isolation tiers")


def _weak(min_level: str = "standard") -> Sandbox:
    info = SandboxInfo("limits-only", True, "No file or network isolation here.")
    return Sandbox(info, SandboxSettings(min_level=min_level))  # type: ignore[arg-type]


def test_code_execution_below_the_minimum_level_is_refused_with_the_reason() -> None:
    refusal = _weak().refusal()
    assert refusal is not None
    assert "limits-only" in refusal and "standard" in refusal and "sandbox.minLevel" in refusal
    assert _weak(min_level="limits-only").refusal() is None


async def test_refused_code_never_prompts_and_never_runs(tmp_path: Path) -> None:
    call = json.dumps({"name": "terminal", "arguments": {"command": "touch made.txt"}})
    backend = ScriptedBackend([ScriptedTurn(f"<tool_call>{call}</tool_call>"), ScriptedTurn("ok")])
    asked: list[ApprovalRequest] = []

    async def approve(request: ApprovalRequest) -> ApprovalOutcome:
        asked.append(request)
        return ApprovalOutcome("allow")

    loop = AgentLoop(backend, BUILTIN_TOOLS, Box(tmp_path, _weak()))
    result = await loop.run(Conversation(), TurnRequest("go"), approve, lambda _e: None)
    assert asked == []
    assert not (tmp_path / "made.txt").exists()
    assert result.tool_calls[0].status == "failed"
    # bypassPermissions is an explicit choice to run outside the box: it is not refused.
    backend2 = ScriptedBackend([ScriptedTurn(f"<tool_call>{call}</tool_call>"), ScriptedTurn("ok")])
    bypass = TurnRequest("go", policy=GatePolicy(bypass_permissions=True))
    await AgentLoop(backend2, BUILTIN_TOOLS, Box(tmp_path, _weak())).run(
        Conversation(), bypass, approve, lambda _e: None
    )
    assert (tmp_path / "made.txt").exists()


def test_strong_launch_hides_homes_and_keeps_git_read_only(tmp_path: Path) -> None:
    ws, scratch = tmp_path / "ws", tmp_path / "scratch"
    (ws / ".git").mkdir(parents=True)
    scratch.mkdir()
    roots = WorkspaceGuard(ws, tmp_path / "quarantine").before().existing_roots()
    assert roots == [".git"]
    readonly = [(f"{ws}/{rel}", None) for rel in roots]
    argv = bwrap_argv(
        "bwrap", workspace=ws, scratch=scratch, network=False, reexpose=[], readonly=readonly
    )
    joined = " ".join(argv)
    assert "--unshare-net" in argv and "--cap-drop ALL" in joined
    assert "--die-with-parent" in argv and "--unshare-pid" in argv
    for hidden in ("/home", "/root", "/run", "/tmp"):
        if Path(hidden).is_dir():
            assert f"--tmpfs {hidden}" in joined
    assert f"--bind {scratch} /tmp" in joined
    assert f"--bind {ws} {ws}" in joined
    assert joined.index(f"--bind {ws} {ws}") < joined.index(f"--ro-bind {ws}/.git {ws}/.git")
    networked = bwrap_argv("bwrap", workspace=ws, scratch=scratch, network=True, reexpose=[])
    assert "--unshare-net" not in networked


def test_toolchains_in_a_hidden_home_are_re_exposed_read_only(tmp_path: Path) -> None:
    paths = reexposed_paths({"PATH": "/usr/bin:/root/.cargo/bin"})
    assert all(p.startswith(("/home", "/root", "/run", "/tmp", "/var/tmp")) for p in paths)
    if Path("/root/.cargo/bin").is_dir():
        assert "/root/.cargo/bin" in paths


def test_bypass_launch_is_the_bare_command_with_a_scrubbed_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_" + "a" * 36)
    sandbox = probe().sandbox
    launch, info = sandbox.prepare(("true",), cwd=tmp_path, scratch=tmp_path, bypass=True)
    head = launch.argv[:-1]
    assert launch.argv[-1] == "true"
    if sandbox.setpriv is not None:  # the lifeline: it dies with a server killed with SIGKILL
        assert head[:3] == (sandbox.setpriv, "--pdeathsig", "KILL")
    elif launch.group is None:
        assert head == ()
    if launch.group is None:
        assert "gatehouse-gate" not in " ".join(head)
    else:  # where cgroups are writable: a group to kill the whole tree, without a process limit
        assert "/bin/sh" in head
        assert not launch.group.limits_processes
        launch.group.remove()
    assert info.level == "none"
    assert "GITHUB_TOKEN" not in launch.env


@linux_only
def test_probe_picks_a_tier_that_really_ran_and_doctor_explains_each() -> None:
    data = report()
    levels = {t["level"]: t for t in data["tiers"]}
    assert {"strong", "standard", "limits-only"} <= set(levels)
    assert data["level"] in ("strong", "standard", "limits-only", "none")
    if data["level"] != "none":
        assert levels[data["level"]]["available"]
    for tier in data["tiers"]:
        assert tier["detail"]
    text = render(data)
    assert f"Isolation level: {data['level']}" in text
    assert "minLevel" in text


def test_the_early_probe_needs_the_workspace_before_anything_runs(tmp_path: Path) -> None:
    # Without the workspace, a program planted in an activated .venv/bin on PATH could be run
    # by the self-tests: the early probe refuses to start.
    with pytest.raises(ValueError, match="workspace"):
        EarlyProbe(Place(None, tmp_path / "bin"))


def test_the_early_probe_is_adopted_for_its_workspace_with_the_real_settings(
    tmp_path: Path,
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    early = EarlyProbe(Place(ws, tmp_path / "bin"))
    settings = SandboxSettings(network=True, min_level="strong")
    report = early.report(settings, ws)
    assert report.sandbox.settings == settings
    if report.sandbox.info.level in ("strong", "standard"):
        assert report.sandbox.info.network is True  # what the prompts will say
    other = tmp_path / "other"
    other.mkdir()
    again = early.report(SandboxSettings(), other)  # another workspace: probed again
    assert again.sandbox.settings == SandboxSettings()
