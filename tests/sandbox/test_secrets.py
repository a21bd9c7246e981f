"""The server's environment: secrets it holds never reach a command, by any route."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

from tests.e2e.conftest import StartServer
from tests.sandbox.conftest import (
    assert_nothing_left,
    python,
    read_environ,
    run_with_server_pid,
    status_answers,
    terminal,
)

PROC_SCAN = """
import glob
read = 0
for path in sorted(glob.glob('/proc/[0-9]*/environ')) + ['/proc/self/environ']:
    try:
        data = open(path, 'rb').read()
    except OSError as exc:
        print(path, 'unreadable', exc.errno)
        continue
    read += 1
    print(path, data.replace(b'\\0', b' ').decode(errors='replace'))
print('environ files read:', read)
"""


async def test_reading_secrets_from_the_server_environment(
    start_server: StartServer, tmp_path: Path
) -> None:
    token = f"ghtoken{uuid.uuid4().hex}"
    openai_like = f"sk-{uuid.uuid4().hex}{uuid.uuid4().hex}"
    locale_like = f"sk-{uuid.uuid4().hex}{uuid.uuid4().hex}"
    extra_env = {
        "GH_E2E_SECRET_TOKEN": token,  # a secret-looking name
        "BUILD_LABEL": openai_like,  # a harmless name, not allow-listed, with a secret value
        "LC_GATEHOUSE_NOTE": locale_like,  # an allow-listed name (LC_*) with a secret value
    }

    def calls(server_pid: int) -> list[str]:
        if os.getuid() == 0:  # root reads the (non-dumpable) server's environ: the bait is there
            held = read_environ(server_pid)
            assert token.encode() in held and openai_like.encode() in held
        return [
            terminal("env; echo env-done"),
            terminal("cat /proc/$PPID/environ | tr '\\0' '\\n'; echo ppid-done"),
            terminal("cat /proc/1/environ | tr '\\0' '\\n'; echo pid1-done"),
            python(PROC_SCAN),
            terminal(f"cat /proc/{server_pid}/environ; echo rc=$?"),
            python(f"print(open('/proc/{server_pid}/environ', 'rb').read())"),
        ]

    run = await run_with_server_pid(start_server, tmp_path, calls, extra_env=extra_env)

    wire = run.wire()
    for value in (token, openai_like, locale_like):
        assert value not in wire, "a secret of the server's environment reached a command"
    assert "PATH=" in run.ends[0]["result"]  # the commands really ran and printed environments
    assert "PATH=" in run.ends[2]["result"]
    assert "environ files read: " in run.ends[3]["result"]
    assert "environ files read: 0" not in run.ends[3]["result"]
    assert "rc=1" in run.ends[4]["result"]  # the server's pid is not even visible inside
    await assert_nothing_left([token], tmp_path / "ws")


async def test_signalling_the_server_and_other_host_processes(
    start_server: StartServer, tmp_path: Path
) -> None:
    """The server (and every host process) is outside the command's pid namespace."""
    test_pid = os.getpid()

    def calls(server_pid: int) -> list[str]:
        return [
            terminal(f"kill -STOP {server_pid}; echo rc=$?; kill -9 {server_pid}; echo rc=$?"),
            terminal(f"kill -9 {test_pid}; echo rc=$?"),
            terminal("kill -9 -1; echo survived=$?"),  # everything it can see: only itself
            python(
                "import os, signal\n"
                f"for pid in ({server_pid}, {test_pid}, 1):\n"
                "    try:\n"
                "        os.kill(pid, 0)\n"
                "        print('VISIBLE', pid)\n"
                "    except OSError as exc:\n"
                "        print('not visible', pid, exc.errno)\n"
            ),
        ]

    run = await run_with_server_pid(start_server, tmp_path, calls)

    assert run.ends[0]["result"].count("rc=1") == 2, run.ends[0]
    assert "rc=1" in run.ends[1]["result"]
    assert f"not visible {run.server_pid} " in run.ends[3]["result"]
    assert f"not visible {test_pid} " in run.ends[3]["result"]
    assert run.result["stopReason"] == "end_turn"  # the server lived on to finish the turn
    await status_answers(run.peer)
