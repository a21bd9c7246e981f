"""The auto-run paths (``sandbox/autorun.py``, ``gitconfig.py``, ``guard.py``, ``quarantine.py``,
``runtime.py``): found everywhere, restored or moved out after a call, never by following a link.
The standard tier's protection is this code alone, so it is also exercised through the runner."""

from __future__ import annotations

import asyncio
import errno
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from sandbox import gitconfig, quarantine
from sandbox.autorun import AutorunScanner
from sandbox.guard import WorkspaceGuard
from sandbox.info import SandboxInfo
from sandbox.runner import ExecRequest, execute
from sandbox.runtime import drop_workspace_imports, find_program
from sandbox.tiers import Sandbox

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX")
GIT = shutil.which("git")


def test_gitconfig_reads_what_git_reads() -> None:
    text = """
# comment
[core]
    hooksPath = ".husky/_"   ; trailing comment
    fsmonitor = ./tools/fsmon.sh --flag
[include]
    path = ../shared.gitconfig
[includeIf "gitdir:~/work/"]
    path = ~/work.gitconfig
[diff "pdf"]
    textconv = "scripts/pdf2txt" --x
[alias]
    hi = !./bin/hi.sh arg
    st = status
[Core]
    HOOKSPATH = "a \\"quoted\\" \\
continued"
[branch.main] remote = origin
"""
    entries = gitconfig.parse(text)
    assert gitconfig.hooks_paths(entries) == [".husky/_", 'a "quoted" continued']
    programs = {e.name: gitconfig.program_of(e) for e in entries}
    assert programs["core.fsmonitor"] == "./tools/fsmon.sh"
    assert programs["diff.pdf.textconv"] == "scripts/pdf2txt"
    assert programs["alias.hi"] == "./bin/hi.sh"
    assert programs["alias.st"] is None and programs["branch.main.remote"] is None
    included = gitconfig.included_paths(entries, "/r/.git")
    assert included[0] == "/r/shared.gitconfig"
    assert included[1] == os.path.expanduser("~/work.gitconfig")


def _repo(path: Path, config: str = "") -> Path:
    (path / ".git" / "hooks").mkdir(parents=True)
    (path / ".git" / "objects").mkdir()
    (path / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (path / ".git" / "config").write_text("[core]\n\tbare = false\n" + config)
    return path


def test_scanner_finds_every_auto_run_path_with_no_cap(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    _repo(ws, "[core]\n\thooksPath = tools/hooks\n\tfsmonitor = scripts/mon.sh\n")
    _repo(ws / "node_modules" / "pkg")
    _repo(ws / ".venv" / "src" / "editable")
    for i in range(6000):
        (ws / "bulk" / f"d{i:04}").mkdir(parents=True)
    _repo(ws / "zzz" / "late")
    (ws / "wt").mkdir()
    (ws / "wt" / ".git").write_text("gitdir: ../store/wt.git\n")  # a worktree or submodule
    (ws / "store" / "wt.git").mkdir(parents=True)
    (ws / "real_husky").mkdir()
    (ws / ".husky").symlink_to("real_husky")
    for name in (".vscode", ".idea", ".devcontainer", ".gatehouse"):
        (ws / "sub" / name).mkdir(parents=True)
    (ws / ".envrc").write_text("")
    (ws / ".pre-commit-config.yaml").write_text("")
    found = AutorunScanner(ws, env={"HOME": str(tmp_path / "home")}).find()
    expected = {
        ".git",
        "node_modules/pkg/.git",
        ".venv/src/editable/.git",
        "zzz/late/.git",
        "wt/.git",
        "store/wt.git",
        "tools/hooks",
        "scripts/mon.sh",
        ".husky",
        "real_husky",
        ".envrc",
        ".pre-commit-config.yaml",
        *(f"sub/{n}" for n in (".vscode", ".idea", ".devcontainer", ".gatehouse")),
    }
    assert expected <= set(found), expected - set(found)
    assert "core.hooksPath" in found["tools/hooks"]


def test_the_scan_cache_sees_a_new_entry_even_behind_a_restored_mtime(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "a" / "b").mkdir(parents=True)
    scanner = AutorunScanner(ws)
    assert scanner.find() == {}
    folder = ws / "a" / "b"
    before = folder.stat()
    (folder / ".git").mkdir()
    os.utime(folder, ns=(before.st_atime_ns, before.st_mtime_ns))  # hide it from an mtime cache
    assert "a/b/.git" in scanner.find()
    assert scanner.folders == 3


def _guard(tmp_path: Path, ws: Path) -> WorkspaceGuard:
    return WorkspaceGuard(ws, tmp_path / "quarantine")


def test_guard_restores_changed_files_and_moves_new_ones_out(tmp_path: Path) -> None:
    ws = _repo(tmp_path / "ws")
    (ws / ".git" / "hooks" / "pre-commit.sample").write_text("#!/bin/sh\n")
    (ws / ".vscode").mkdir()
    (ws / ".vscode" / "settings.json").write_text("{}")
    guard = _guard(tmp_path, ws)
    snap = guard.before()
    (ws / ".git" / "config").write_text("[core]\n\tfsmonitor = evil\n")
    (ws / ".git" / "hooks" / "pre-commit").write_text("#!/bin/sh\nevil\n")
    (ws / ".git" / "hooks" / "pre-commit.sample").chmod(0o755)
    (ws / ".git" / "objects" / "ab").mkdir()  # data: git commit inside the sandbox still works
    (ws / ".vscode" / "tasks.json").write_text('{"runOn": "folderOpen"}')
    (ws / "sub").mkdir()
    (ws / "sub" / ".git").mkdir()
    changes = {c.path: c for c in guard.after(snap)}
    assert set(changes) == {
        ".git/config",
        ".git/hooks/pre-commit",
        ".git/hooks/pre-commit.sample",
        ".vscode/tasks.json",
        "sub/.git",
    }
    assert changes[".git/config"].action == "restored"
    assert "bare = false" in (ws / ".git" / "config").read_text()
    assert not (ws / ".git" / "hooks" / "pre-commit").exists()
    assert stat.S_IMODE((ws / ".git" / "hooks" / "pre-commit.sample").stat().st_mode) != 0o755
    assert (ws / ".git" / "objects" / "ab").is_dir()
    assert not (ws / "sub" / ".git").exists() and not (ws / ".vscode" / "tasks.json").exists()
    moved = tmp_path / "quarantine"
    assert len(list(moved.glob("*/.git/config"))) == 1
    assert list(moved.glob("*/sub/.git"))
    assert guard.after(guard.before()) == []  # the next call starts clean


def test_guard_never_follows_a_planted_link_when_restoring(tmp_path: Path) -> None:
    ws = _repo(tmp_path / "ws")
    (ws / ".git" / "hooks" / "post-checkout").write_text("#!/bin/sh\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    guard = _guard(tmp_path, ws)
    snap = guard.before()
    shutil.rmtree(ws / ".git" / "hooks")
    (ws / ".git" / "hooks").symlink_to(elsewhere)  # a restore by path would write into it
    changes = {c.path: c.action for c in guard.after(snap)}
    assert changes[".git/hooks"] == "restored"
    assert list(elsewhere.iterdir()) == []
    assert (ws / ".git" / "hooks").is_dir() and not (ws / ".git" / "hooks").is_symlink()
    assert (ws / ".git" / "hooks" / "post-checkout").read_text() == "#!/bin/sh\n"


def test_quarantine_copies_across_file_systems(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = tmp_path / "ws"
    (ws / "new" / ".git" / "hooks").mkdir(parents=True)
    (ws / "new" / ".git" / "hooks" / "x").write_text("payload")
    (ws / "new" / ".git" / "link").symlink_to("/etc/passwd")
    real_rename = os.rename

    def cross_device(*args: object, **kwargs: object) -> None:
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(os, "rename", cross_device)
    fd = os.open(ws, os.O_RDONLY | os.O_DIRECTORY)
    try:
        dest = Path(quarantine.Quarantine(tmp_path / "q").move_out(fd, "new/.git"))
    finally:
        os.close(fd)
        monkeypatch.setattr(os, "rename", real_rename)
    assert (dest / "hooks" / "x").read_text() == "payload"
    assert os.readlink(dest / "link") == "/etc/passwd"
    assert not (ws / "new" / ".git").exists()


def test_programs_are_never_taken_from_the_workspace_or_a_relative_path(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / ".venv" / "bin").mkdir(parents=True)
    good = tmp_path / "bin"
    good.mkdir()
    for folder in (ws / ".venv" / "bin", good):
        (folder / "tool").write_text("#!/bin/sh\n")
        (folder / "tool").chmod(0o755)
    path = f"{ws}/.venv/bin:.:relative:{good}"
    assert find_program("tool", ws, {"PATH": path}) == f"{good}/tool"
    assert find_program("tool", None, {"PATH": path}) == f"{ws}/.venv/bin/tool"


def test_the_workspace_is_dropped_from_sys_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "path", ["", str(tmp_path), "/usr/lib/python3"])
    assert drop_workspace_imports(tmp_path) == ["", str(tmp_path)]
    assert sys.path == ["/usr/lib/python3"]


def test_standard_level_refuses_while_the_servers_runtime_is_in_the_workspace(
    tmp_path: Path,
) -> None:
    ws = tmp_path / "ws"
    (ws / ".venv").mkdir(parents=True)
    sandbox = Sandbox(SandboxInfo("standard", False, "Landlock"))
    sandbox._runtime = [str(ws / ".venv"), "/usr/lib/python3"]
    refusal = sandbox.refusal(ws)
    assert refusal is not None and f"{ws}/.venv" in refusal and "Landlock" in refusal
    assert sandbox.refusal(tmp_path / "elsewhere") is None
    strong = Sandbox(SandboxInfo("strong", False, "bwrap"))
    strong._runtime = [str(ws / ".venv")]
    assert strong.refusal(ws) is None  # mounted read-only instead


@pytest.mark.skipif(GIT is None, reason="needs git")
async def test_standard_tier_undoes_what_approved_code_does_to_a_repository(
    tmp_path: Path,
) -> None:
    """Through the runner at the standard level (Landlock cannot make ``.git`` read-only): the
    change is undone after the call and reported; the next host ``git status`` runs nothing."""
    from sandbox.probe import build_tier

    sandbox, why = build_tier("standard")
    if sandbox is None:
        pytest.skip(f"the standard tier does not work here: {why}")
    sandbox.quarantine_root = tmp_path / "quarantine"
    ws = tmp_path / "ws"
    ws.mkdir()
    await asyncio.to_thread(subprocess.run, [GIT, "init", "-q", str(ws)], check=True)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    marker = tmp_path / "ran"
    script = (
        f"printf '[core]\\n\\tfsmonitor = touch {marker}; false\\n' >> .git/config && "
        f"printf '#!/bin/sh\\ntouch {marker}\\n' > .git/hooks/pre-commit && "
        "chmod +x .git/hooks/pre-commit && mkdir -p nested && git init -q nested && "
        "echo finished-ok"
    )
    request = ExecRequest(
        ("/bin/sh", "-c", script),
        ws,
        30,
        scratch_dir=scratch,
        env_extra={"HOME": str(scratch)},  # the real home is hidden at this level
    )
    result = await execute(request, sandbox=sandbox)
    assert result.sandbox.level == "standard"
    assert "finished-ok" in result.output, result.output
    actions = {c.path: c.action for c in result.protected}
    assert actions == {  # result.output: see below
        ".git/config": "restored",
        ".git/hooks/pre-commit": "quarantined",
        "nested/.git": "quarantined",
    }, result.output
    assert "nested/.git" in result.output and "quarantine" in result.output
    for repo in (ws, ws / "nested"):
        await asyncio.to_thread(
            subprocess.run, [GIT, "-C", str(repo), "status"], capture_output=True, check=False
        )
    assert not marker.exists()
