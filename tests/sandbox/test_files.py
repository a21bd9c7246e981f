"""The file system: only the workspace is writable, the home folder is neither readable nor
writable, ``.git`` is read-only, and symlinks do not lead out."""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.conftest import StartServer
from tests.sandbox.conftest import (
    PY,
    assert_nothing_left,
    on_host,
    python,
    run_calls,
    terminal,
)


@pytest.fixture
def outside_dirs() -> Iterator[dict[str, Path]]:
    """Host folders outside the workspace, created by the test (removed afterwards)."""
    name = f"gatehouse-escape-{uuid.uuid4().hex}"
    dirs = {"tmp": Path("/tmp", name), "var_tmp": Path("/var/tmp", name)}
    if Path("/dev/shm").is_dir():
        dirs["dev_shm"] = Path("/dev/shm", name)
    for path in dirs.values():
        path.mkdir(mode=0o777)
    yield dirs
    for path in dirs.values():
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def fake_home(tmp_path: Path) -> tuple[Path, str]:
    """``HOME`` for the server: ``.ssh/id_rsa`` holds a unique secret."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    secret = f"ghsecret{uuid.uuid4().hex}"
    key = home / ".ssh" / "id_rsa"
    key.write_text(
        f"-----BEGIN OPENSSH PRIVATE KEY-----\n{secret}\n-----END OPENSSH PRIVATE KEY-----\n"
    )
    key.chmod(0o600)
    (home / ".bashrc").write_text("# original\n")
    return home, secret


async def test_writing_outside_the_workspace(
    start_server: StartServer,
    outside_dirs: dict[str, Path],
    etc_target: Path,
    marker: str,
    tmp_path: Path,
) -> None:
    targets = [d / "pwned" for d in outside_dirs.values()] + [etc_target]
    calls = [terminal(f"echo {marker} > {t}; echo rc=$?") for t in targets]
    calls.append(python(f"open('{targets[0]}', 'w').write('x')\nprint('written')"))
    calls.append(terminal(f"echo {marker} > inside.txt; echo rc=$?"))  # the control
    run = await run_calls(start_server, *calls)

    for target in targets:
        assert not target.exists(), f"the sandbox let a command write {target}"
    for end in run.ends[: len(targets)]:
        assert "rc=1" in end["result"], end
    assert "written" not in run.ends[len(targets)]["result"]
    # /etc is there but read-only; the host's /tmp, /var/tmp, /dev/shm are not visible at all
    assert "Read-only file system" in run.ends[len(targets) - 1]["result"]
    assert "No such file or directory" in run.ends[0]["result"]
    assert "rc=0" in run.ends[-1]["result"]
    assert (tmp_path / "ws" / "inside.txt").read_text() == f"{marker}\n"
    await assert_nothing_left([marker], tmp_path / "ws")


async def test_writing_into_the_home_folder(
    start_server: StartServer, fake_home: tuple[Path, str], marker: str, tmp_path: Path
) -> None:
    home, _ = fake_home
    run = await run_calls(
        start_server,
        terminal(
            f'echo {marker} > ~/pwned; echo rc=$?; echo {marker} > "$HOME/pwned2"; echo rc=$?'
        ),
        terminal(f"echo {marker} >> ~/.bashrc; echo rc=$?"),
        terminal(f"echo {marker} > {home}/pwned3; echo rc=$?"),
        # Inside, the path can be created (in the private /tmp): it still never reaches the host.
        terminal(f"mkdir -p ~/.config && echo {marker} > ~/.config/pwned4; echo created=$?"),
        extra_env={"HOME": str(home)},
    )

    assert sorted(p.name for p in home.iterdir()) == [".bashrc", ".ssh"]
    assert (home / ".bashrc").read_text() == "# original\n"
    assert run.ends[0]["result"].count("rc=1") == 2, run.ends[0]
    for end in run.ends[1:3]:
        assert "rc=1" in end["result"], end
    assert "created=0" in run.ends[3]["result"]
    await assert_nothing_left([marker], tmp_path / "ws")


async def test_reading_a_secret_from_the_home_folder(
    start_server: StartServer, fake_home: tuple[Path, str], tmp_path: Path
) -> None:
    home, secret = fake_home
    key = home / ".ssh" / "id_rsa"
    run = await run_calls(
        start_server,
        terminal("cat ~/.ssh/id_rsa; echo rc=$?"),
        terminal(f"cat {key}; echo rc=$?"),
        terminal(f"ls -la {home} ~ ; grep -r ghsecret {home} ~ 2>&1 | head; echo done"),
        python(f"print(open({str(key)!r}).read())"),
        extra_env={"HOME": str(home)},
    )

    assert secret not in run.wire()
    assert "rc=1" in run.ends[0]["result"] and "rc=1" in run.ends[1]["result"]
    assert "No such file or directory" in run.ends[3]["result"]
    await assert_nothing_left([secret], tmp_path / "ws")


async def test_reading_a_secret_from_the_home_folder_when_path_lists_it(
    start_server: StartServer, fake_home: tuple[Path, str], tmp_path: Path
) -> None:
    """Some users have their home folder itself (or a folder holding it) on PATH. PATH entries
    are re-exposed read-only for toolchains; that must not re-expose the whole home."""
    home, secret = fake_home
    run = await run_calls(
        start_server,
        terminal("cat ~/.ssh/id_rsa; echo rc=$?"),
        extra_env={"HOME": str(home), "PATH": f"{home}:{os.environ['PATH']}"},
    )

    result = run.ends[0]["result"]
    assert secret not in result, (
        "~/.ssh/id_rsa was readable inside the sandbox because the home folder is on PATH "
        f"(re-exposed read-only as a toolchain): {result!r}"
    )
    assert secret not in run.wire()
    await assert_nothing_left([secret], tmp_path / "ws")


async def test_writing_git_hooks(start_server: StartServer, tmp_path: Path, marker: str) -> None:
    ws = tmp_path / "ws"
    hooks = ws / ".git" / "hooks"
    hooks.mkdir(parents=True)
    config = ws / ".git" / "config"
    config.write_text("[core]\n\tbare = false\n")
    run = await run_calls(
        start_server,
        terminal(f"printf '#!/bin/sh\\necho {marker}\\n' > .git/hooks/pre-commit; echo rc=$?"),
        terminal(f"printf '[core]\\n\\thooksPath = /tmp/{marker}\\n' >> .git/config; echo rc=$?"),
        terminal("mv .git .git-moved; echo rc=$?; rm -rf .git; echo rc=$?"),
        python(f"open('.git/hooks/post-checkout', 'w').write('{marker}')"),
        terminal(f"echo {marker} > ok.txt; echo rc=$?"),
    )

    assert not (hooks / "pre-commit").exists()
    assert not (hooks / "post-checkout").exists()
    assert config.read_text() == "[core]\n\tbare = false\n"
    assert hooks.is_dir() and not (ws / ".git-moved").exists()
    for end in run.ends[:3]:
        assert "rc=0" not in end["result"], end
    assert "Read-only file system" in run.ends[0]["result"]
    assert "Error" in run.ends[3]["result"]  # the python tool's OSError traceback
    assert "rc=0" in run.ends[4]["result"]
    assert (ws / "ok.txt").read_text() == f"{marker}\n"
    await assert_nothing_left([marker], ws)


async def test_writing_git_hooks_of_a_nested_repository(
    start_server: StartServer, tmp_path: Path, marker: str
) -> None:
    """A workspace often holds other repositories (a folder of checkouts, vendored clones): their
    hooks run on the host just the same when the user runs git there."""
    ws = tmp_path / "ws"
    (ws / ".git" / "hooks").mkdir(parents=True)
    nested = ws / "vendor" / "lib" / ".git" / "hooks"
    nested.mkdir(parents=True)
    run = await run_calls(
        start_server,
        terminal(f"echo {marker} > vendor/lib/.git/hooks/pre-commit; echo rc=$?"),
    )

    assert not (nested / "pre-commit").exists(), (
        "a sandboxed command wrote a git hook of the nested repository vendor/lib "
        f"(its .git is writable): {run.ends[0]['result']!r}"
    )
    await assert_nothing_left([marker], ws)


async def test_escaping_through_a_symlink(
    start_server: StartServer,
    *,
    outside_dirs: dict[str, Path],
    fake_home: tuple[Path, str],
    etc_target: Path,
    tmp_path: Path,
    marker: str,
) -> None:
    home, secret = fake_home
    ws = tmp_path / "ws"
    ws.mkdir()
    outside = outside_dirs["tmp"]
    (ws / "link").symlink_to(outside)
    (ws / "homelink").symlink_to(home)
    (ws / "etclink").symlink_to("/etc")
    run = await run_calls(
        start_server,
        terminal(f"echo {marker} > link/pwned; echo rc=$?"),
        terminal(f"echo {marker} > homelink/pwned; echo rc=$?; cat homelink/.ssh/id_rsa"),
        terminal(f"echo {marker} > etclink/{etc_target.name}; echo rc=$?"),
        python(f"open('link/pwned2', 'w').write('{marker}')"),
        terminal(f"ln -s {outside} link2 && echo {marker} > link2/pwned3; echo rc=$?"),
        extra_env={"HOME": str(home)},
    )

    assert not on_host(etc_target), "a symlink in the workspace led to a write in /etc"
    assert list(outside.iterdir()) == [], "a symlink in the workspace led to a write outside it"
    assert sorted(p.name for p in home.iterdir()) == [".bashrc", ".ssh"]
    assert secret not in run.wire()
    for index in (0, 1, 2, 4):
        assert "rc=0" not in run.ends[index]["result"], run.ends[index]
    await assert_nothing_left([marker], ws)


async def test_the_interpreter_still_runs_inside(start_server: StartServer, tmp_path: Path) -> None:
    """The control: hiding the homes keeps the tools usable (the re-exposed toolchain)."""
    run = await run_calls(
        start_server,
        python("import sys; print('py-ok', sys.version_info[0])"),
        terminal(f"{PY} -c 'print(40 + 2)'"),
    )
    assert "py-ok 3" in run.ends[0]["result"]
    assert "42" in run.ends[1]["result"]
    assert all(end["exitCode"] == 0 for end in run.ends)
