"""Checkpoints of a hostile workspace, what a turn changed, and writing a checkpoint back."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from engine.memory.checkpoints import TurnCheckpoints, describe_changes, plan_rewind
from engine.memory.rewind import apply_steps
from engine.memory.shadow import ShadowRepo

LIMIT = 4096


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


@pytest.fixture
def repo(tmp_path: Path, workspace: Path) -> ShadowRepo:
    return ShadowRepo(tmp_path / "data" / "checkpoints", workspace, max_file_bytes=LIMIT)


def tree_digest(folder: Path) -> str:
    """Everything under ``folder``: names, kinds, modes, contents and mtimes."""
    h = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        info = path.lstat()
        h.update(f"{path.relative_to(folder)} {info.st_mode} {info.st_mtime_ns}".encode())
        if path.is_file() and not path.is_symlink():
            h.update(path.read_bytes())
    return h.hexdigest()


def git(cwd: Path, *args: str) -> None:
    env = {"PATH": os.environ["PATH"], "HOME": str(cwd), "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


def test_a_checkpoint_follows_gitignore_and_says_what_it_did_not_capture(
    workspace: Path, repo: ShadowRepo
) -> None:
    (workspace / ".gitignore").write_text("*.log\nbuild/\n")
    (workspace / "app.py").write_text("print('hi')\n")
    (workspace / "debug.log").write_text("noise")
    (workspace / "build").mkdir()
    (workspace / "build" / "out.o").write_bytes(b"\0" * 10)
    (workspace / "big.bin").write_bytes(b"x" * (LIMIT + 1))
    (workspace / "vendor").mkdir()
    git(workspace / "vendor", "init", "-q")
    (workspace / "vendor" / "lib.py").write_text("x = 1\n")
    snap = repo.snapshot("test")
    assert set(repo.entries(snap.commit)) == {".gitignore", "app.py"}
    assert snap.too_large == ("big.bin",)
    assert snap.own_repositories == ("vendor/",)
    assert set(snap.ignored) == {"build/", "debug.log"}
    lines = snap.not_captured(LIMIT)
    assert "big.bin (over the 4 KiB size limit)" in lines
    assert "vendor/ (a git repository of its own)" in lines
    assert repo.uncaptured(snap.commit) == {"big.bin", "vendor/"}


def test_the_users_git_repository_is_never_touched(workspace: Path, repo: ShadowRepo) -> None:
    (workspace / "a.txt").write_text("one\n")
    git(workspace, "init", "-q")
    git(workspace, "add", "a.txt")
    git(workspace, "-c", "user.name=u", "-c", "user.email=u@x", "commit", "-qm", "first")
    (workspace / "a.txt").write_text("two\n")
    (workspace / "b.txt").write_text("new\n")
    before = tree_digest(workspace / ".git")
    first = repo.snapshot("one")
    (workspace / "b.txt").write_text("changed\n")
    second = repo.snapshot("two")
    assert tree_digest(workspace / ".git") == before
    assert not any(path.startswith(".git/") for path in repo.entries(second.commit))
    assert set(repo.changed(first.commit, second.commit)) == {"b.txt"}


def test_nothing_in_the_workspace_makes_git_run_a_program(
    workspace: Path, repo: ShadowRepo, tmp_path: Path
) -> None:
    pwned = tmp_path / "pwned"
    (workspace / ".git").mkdir()
    (workspace / ".git" / "hooks").mkdir()
    hook = workspace / ".git" / "hooks" / "post-index-change"
    hook.write_text(f"#!/bin/sh\ntouch {pwned}-hook\n")
    hook.chmod(0o755)
    (workspace / ".git" / "config").write_text(
        f'[core]\n\tfsmonitor = "touch {pwned}-fsmonitor"\n'
        f'[filter "evil"]\n\tclean = touch {pwned}-clean\n\tsmudge = touch {pwned}-smudge\n'
        "\trequired = true\n"
    )
    (workspace / ".gitattributes").write_text("* filter=evil text eol=crlf ident\n")
    (workspace / ".gitmodules").write_text('[submodule "x"]\n\tpath = x\n\turl = /nowhere\n')
    (workspace / "code.py").write_text("line one\nline two $Id$\n")
    snap = repo.snapshot("hostile")
    content = repo.blobs([repo.entries(snap.commit)["code.py"][1]])
    assert list(content.values()) == [b"line one\nline two $Id$\n"]  # no conversion, no filter
    assert not list(tmp_path.glob("pwned*"))


def test_a_fifo_does_not_hang_a_checkpoint_and_links_are_kept_as_links(
    workspace: Path, repo: ShadowRepo, tmp_path: Path
) -> None:
    os.mkfifo(workspace / "pipe")
    (tmp_path / "secret.txt").write_text("outside")
    os.symlink(tmp_path / "secret.txt", workspace / "link")
    snap = repo.snapshot("special")
    entries = repo.entries(snap.commit)
    assert "pipe" not in entries
    mode, oid = entries["link"]
    assert mode == "120000"
    assert repo.blobs([oid])[oid] == str(tmp_path / "secret.txt").encode()


def test_an_unchanged_workspace_reuses_its_checkpoint(workspace: Path, repo: ShadowRepo) -> None:
    (workspace / "a.txt").write_text("a\n")
    assert repo.snapshot("one").commit == repo.snapshot("two").commit


def test_changes_are_unified_diffs_per_file(workspace: Path, repo: ShadowRepo) -> None:
    (workspace / "keep.txt").write_text("same\n")
    (workspace / "edit.txt").write_text("one\ntwo\n")
    (workspace / "gone.txt").write_text("bye\n")
    before = repo.snapshot("before").commit
    (workspace / "edit.txt").write_text("one\n2\n")
    (workspace / "gone.txt").unlink()
    (workspace / "new.bin").write_bytes(b"\0\1\2")
    (workspace / "tail.txt").write_text("no newline")
    after = repo.snapshot("after").commit
    changes = {c.path: c for c in describe_changes(repo, before, after)}
    assert {p: c.action for p, c in changes.items()} == {
        "edit.txt": "modified",
        "gone.txt": "deleted",
        "new.bin": "created",
        "tail.txt": "created",
    }
    assert changes["edit.txt"].diff == (
        "--- a/edit.txt\n+++ b/edit.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+2\n"
    )
    assert changes["new.bin"].binary
    assert changes["tail.txt"].diff.endswith("+no newline\n\\ No newline at end of file\n")


def _turn(repo: ShadowRepo, workspace: Path, change: dict[str, str | None]) -> TurnCheckpoints:
    before = repo.snapshot("before").commit
    for name, text in change.items():
        if text is None:
            (workspace / name).unlink()
        else:
            (workspace / name).parent.mkdir(parents=True, exist_ok=True)
            (workspace / name).write_text(text)
    return TurnCheckpoints(1, before, repo.snapshot("after").commit)


def test_rewind_undoes_only_the_agents_changes_and_flags_hand_edits(
    workspace: Path, repo: ShadowRepo
) -> None:
    (workspace / "a.txt").write_text("a0\n")
    (workspace / "b.txt").write_text("b0\n")
    turn = _turn(repo, workspace, {"a.txt": "a1\n", "b.txt": "b1\n", "new/c.txt": "c\n"})
    (workspace / "b.txt").write_text("my edit\n")  # by hand, after the turn
    (workspace / "mine.txt").write_text("mine\n")
    now = repo.snapshot("now").commit
    plan = plan_rewind(repo, [turn], 1, now, lambda _p: False)
    assert plan is not None
    assert [(c.path, c.reason) for c in plan.conflicts] == [("b.txt", "changed_by_hand")]
    assert sorted(s.path for s in plan.steps) == ["a.txt", "b.txt", "new/c.txt"]
    safe = [s for s in plan.steps if s.path != "b.txt"]
    applied = apply_steps(repo, workspace, safe, force=False)
    assert sorted(applied.restored) == [("a.txt", "restored"), ("new/c.txt", "deleted")]
    assert (workspace / "a.txt").read_text() == "a0\n"
    assert (workspace / "b.txt").read_text() == "my edit\n"
    assert (workspace / "mine.txt").read_text() == "mine\n"
    assert not (workspace / "new").exists()  # the folder the turn created is gone too


def test_writing_an_auto_run_path_back_needs_force(workspace: Path, repo: ShadowRepo) -> None:
    (workspace / ".envrc").write_text("export A=1\n")
    turn = _turn(repo, workspace, {".envrc": "export A=2\n"})
    now = repo.snapshot("now").commit
    plan = plan_rewind(repo, [turn], 1, now, lambda p: p == ".envrc")
    assert plan is not None
    assert [(c.path, c.reason) for c in plan.conflicts] == [(".envrc", "autorun")]


def test_rewind_replaces_a_link_instead_of_writing_through_it(
    workspace: Path, repo: ShadowRepo, tmp_path: Path
) -> None:
    target = tmp_path / "outside.txt"
    target.write_text("outside, untouched\n")
    (workspace / "f.txt").write_text("original\n")
    turn = _turn(repo, workspace, {"f.txt": "agent\n"})
    now = repo.snapshot("now").commit
    plan = plan_rewind(repo, [turn], 1, now, lambda _p: False)
    assert plan is not None
    (workspace / "f.txt").unlink()
    os.symlink(target, workspace / "f.txt")  # swapped after the plan was made
    refused = apply_steps(repo, workspace, plan.steps, force=False)
    assert refused.restored == [] and "changed while" in refused.skipped[0][1]
    forced = apply_steps(repo, workspace, plan.steps, force=True)
    assert forced.restored == [("f.txt", "restored")]
    assert not (workspace / "f.txt").is_symlink()
    assert (workspace / "f.txt").read_text() == "original\n"
    assert target.read_text() == "outside, untouched\n"


def test_a_file_too_large_to_capture_is_never_written_back(
    workspace: Path, repo: ShadowRepo
) -> None:
    (workspace / "data.bin").write_bytes(b"x" * (LIMIT + 10))  # not captured before the turn
    turn = _turn(repo, workspace, {"data.bin": "small now\n"})
    now = repo.snapshot("now").commit
    plan = plan_rewind(repo, [turn], 1, now, lambda _p: False)
    assert plan is not None
    assert plan.steps == []
    assert [path for path, _why in plan.skipped] == ["data.bin"]


def test_no_checkpoint_when_the_data_folder_lies_inside_the_workspace(workspace: Path) -> None:
    from engine.memory.workspace_memory import MemorySettings, WorkspaceMemory

    inside = WorkspaceMemory(workspace, MemorySettings(), root=workspace / ".local" / "gatehouse")
    assert inside.repo() is None
    assert "inside the workspace" in (inside.checkpoints_off or "")
    outside = WorkspaceMemory(workspace, MemorySettings(), root=workspace.parent / "data")
    assert outside.repo() is not None and outside.checkpoints_off is None
