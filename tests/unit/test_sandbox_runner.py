"""The one entry point through which approved code runs: what a user would notice."""

from __future__ import annotations

import asyncio
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from sandbox.info import UNSANDBOXED
from sandbox.probe import probe
from sandbox.runner import ExecRequest, ExecResult, execute, prepare_launch
from sandbox.tiers import unsandboxed

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="uses POSIX shells and /proc"
)

GITHUB_TOKEN = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
OPENAI_KEY = "sk-proj-" + "ABCDEFGHIJKLMNOPQRSTUVWXYZ987654"


def _request(tmp_path: Path, *argv: str, **kwargs: Any) -> ExecRequest:
    kwargs.setdefault("timeout_seconds", 30)
    return ExecRequest(argv=argv, cwd=tmp_path, **kwargs)


async def _run(tmp_path: Path, *argv: str, **kwargs: Any) -> tuple[ExecResult, str]:
    streamed: list[str] = []
    result = await execute(_request(tmp_path, *argv, **kwargs), streamed.append)
    return result, "".join(streamed)


def _marker() -> str:
    """A unique ``sleep`` duration: it shows up in the process's command line."""
    return f"1000.{uuid.uuid4().int % 10**9:09d}"


def _alive(marker: str) -> list[int]:
    """Living processes whose command line contains ``marker`` (zombies have none)."""
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in cmdline:
                pids.append(int(entry))
    return pids


async def _assert_gone(marker: str) -> None:
    """SIGKILL is asynchronous for grandchildren: allow them a moment to vanish."""
    for _ in range(60):
        if not _alive(marker):
            break
        await asyncio.sleep(0.05)
    assert _alive(marker) == []


async def _wait_started(marker: str, count: int) -> None:
    for _ in range(250):
        if len(_alive(marker)) >= count:
            return
        await asyncio.sleep(0.02)
    raise AssertionError("the processes never started")


# --- environment ---------------------------------------------------------------------------


async def test_secrets_never_reach_the_child(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("MY_TOKEN", "tok-0123456789")
    monkeypatch.setenv("TERM", GITHUB_TOKEN)  # an allowed name with a secret value
    monkeypatch.setenv("LANG", "C.UTF-8")
    monkeypatch.setenv("TZ", "UTC")
    result, streamed = await _run(tmp_path, "env", env_extra={"GATEHOUSE_RUN": "7"})
    assert result.exit_code == 0
    for secret in (OPENAI_KEY, "tok-0123456789", GITHUB_TOKEN, "OPENAI_API_KEY", "MY_TOKEN"):
        assert secret not in result.output
        assert secret not in streamed
    lines = set(result.output.splitlines())
    assert {"LANG=C.UTF-8", "TZ=UTC", "GATEHOUSE_RUN=7", "PYTHONUNBUFFERED=1"} <= lines


async def test_launch_seam_uses_the_scrubbed_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    spec, _ = prepare_launch(_request(tmp_path, "echo", "hi"), unsandboxed())
    assert spec.argv == ("echo", "hi")
    assert spec.cwd == tmp_path
    assert "OPENAI_API_KEY" not in spec.env
    assert spec.env["PYTHONDONTWRITEBYTECODE"] == "1"


# --- results -------------------------------------------------------------------------------


async def test_output_and_exit_code(tmp_path: Path) -> None:
    result, streamed = await _run(tmp_path, "sh", "-c", "echo a; echo b >&2; echo c; exit 3")
    assert result.exit_code == 3
    assert result.output == "a\nb\nc\n"  # stderr merged in order
    assert streamed == result.output
    assert not result.timed_out and not result.output_limit_exceeded
    assert result.sandbox == unsandboxed().info
    assert (result.sandbox.level, result.sandbox.network) == ("none", True)


async def test_killed_by_a_signal_reports_the_negative_signal(tmp_path: Path) -> None:
    result, _ = await _run(tmp_path, "sh", "-c", "kill -TERM $$")
    assert result.exit_code == -15


async def test_runs_in_the_requested_folder(tmp_path: Path) -> None:
    result, _ = await _run(tmp_path, "pwd")
    assert result.output.endswith(f"/{tmp_path.name}\n")


async def test_stdin_code_is_delivered(tmp_path: Path) -> None:
    code = b"import sys\nprint('sum', sum(range(10)))\nprint(sys.stdin.read() == '')\n"
    result, _ = await _run(tmp_path, sys.executable, "-", stdin=code)
    assert result.exit_code == 0
    assert result.output == "sum 45\nTrue\n"


async def test_without_stdin_the_child_reads_nothing(tmp_path: Path) -> None:
    result, _ = await _run(tmp_path, "cat", timeout_seconds=5)
    assert result.exit_code == 0 and result.output == "" and not result.timed_out


async def test_large_stdin_and_output_do_not_deadlock(tmp_path: Path) -> None:
    data = b"0123456789abcdef" * (256 * 1024 // 16) * 8  # 2 MiB through cat
    result, _ = await _run(tmp_path, "cat", stdin=data)
    assert result.exit_code == 0
    assert "Output truncated" in result.output


async def test_a_child_that_ignores_its_stdin(tmp_path: Path) -> None:
    result, _ = await _run(tmp_path, "true", stdin=b"x" * (1 << 20))
    assert result.exit_code == 0


async def test_nonexistent_program(tmp_path: Path) -> None:
    result, streamed = await _run(tmp_path, "no-such-program-gatehouse")
    assert result.exit_code is None
    assert "no-such-program-gatehouse" in result.output
    assert "No such file" in result.output
    assert streamed == result.output


async def test_missing_working_folder(tmp_path: Path) -> None:
    result = await execute(ExecRequest(("true",), tmp_path / "gone", 5))
    assert result.exit_code is None
    assert "does not exist" in result.output


def test_request_validation(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="argv"):
        ExecRequest((), tmp_path, 5)
    with pytest.raises(ValueError, match="timeout"):
        ExecRequest(("true",), tmp_path, 0)


async def test_every_result_reports_the_isolation_it_really_ran_under(tmp_path: Path) -> None:
    sandbox = probe().sandbox
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    request = ExecRequest(("true",), tmp_path, 10, scratch_dir=scratch)
    assert (await execute(request, sandbox=sandbox)).sandbox == sandbox.info
    bypassed = ExecRequest(("true",), tmp_path, 10, scratch_dir=scratch, bypass=True)
    assert (await execute(bypassed, sandbox=sandbox)).sandbox == UNSANDBOXED


async def test_a_failing_on_output_does_not_break_the_run(tmp_path: Path) -> None:
    def broken(_text: str) -> None:
        raise RuntimeError("client went away")

    result = await execute(_request(tmp_path, "echo", "still here"), broken)
    assert result.exit_code == 0 and result.output == "still here\n"


# --- decoding ------------------------------------------------------------------------------


async def test_multibyte_character_split_across_reads(tmp_path: Path) -> None:
    code = (
        "import sys, time\n"
        "out = sys.stdout.buffer\n"
        "out.write(b'price: \\xe2\\x82'); out.flush(); time.sleep(0.3)\n"
        "out.write(b'\\xac\\n'); out.flush()\n"
        "out.write('€'.encode() * 100_000)\n"  # 300 kB: 64 KiB reads split characters
    )
    result, streamed = await _run(
        tmp_path, sys.executable, "-c", code, model_output_limit=1_000_000
    )
    assert "\ufffd" not in result.output
    assert result.output == "price: €\n" + "€" * 100_000
    assert streamed == result.output


async def test_invalid_utf8_is_replaced(tmp_path: Path) -> None:
    result, _ = await _run(tmp_path, "printf", r"ok \377 \342\202")
    assert result.output == "ok \ufffd \ufffd"


# --- limits --------------------------------------------------------------------------------


async def test_timeout_kills_the_process(tmp_path: Path) -> None:
    marker = _marker()
    started = time.monotonic()
    result, streamed = await _run(tmp_path, "sleep", marker, timeout_seconds=1)
    assert time.monotonic() - started < 1 + 5
    assert result.timed_out and result.exit_code == -9
    assert "[gatehouse] Killed after 1 s (toolTimeoutSeconds)." in result.output
    assert "Killed after 1 s" in streamed
    await _assert_gone(marker)


@pytest.mark.parametrize(
    "script",
    [
        "sleep {m} & sleep {m}",  # a background child in the same group
        "setsid sleep {m} & sleep {m}",  # a child in its own session (found through its parent)
        "(setsid sleep {m} &); sleep {m}",  # an orphan outside the session holding the output
    ],
)
async def test_timeout_kills_the_whole_tree(tmp_path: Path, script: str) -> None:
    marker = _marker()
    started = time.monotonic()
    result, _ = await _run(tmp_path, "sh", "-c", script.format(m=marker), timeout_seconds=2)
    assert time.monotonic() - started < 2 + 5
    assert result.timed_out
    await _assert_gone(marker)


@pytest.mark.parametrize("script", ["sleep {m} & echo done", "(setsid sleep {m} &); echo done"])
async def test_background_processes_do_not_outlive_a_finished_command(
    tmp_path: Path, script: str
) -> None:
    marker = _marker()
    started = time.monotonic()
    result, _ = await _run(tmp_path, "sh", "-c", script.format(m=marker), timeout_seconds=60)
    assert time.monotonic() - started < 10
    assert result.exit_code == 0 and result.output == "done\n" and not result.timed_out
    await _assert_gone(marker)


async def test_cancellation_kills_the_tree_and_reraises(tmp_path: Path) -> None:
    marker = _marker()
    task = asyncio.create_task(
        execute(_request(tmp_path, "sh", "-c", f"sleep {marker} & sleep {marker}"))
    )
    await _wait_started(marker, 2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await _assert_gone(marker)
    assert asyncio.all_tasks() == {asyncio.current_task()}


async def test_big_output_is_capped_for_the_model_and_the_stream(tmp_path: Path) -> None:
    code = "import sys\nfor i in range(500_000): sys.stdout.write(f'line {i:07d}\\n')\n"  # 6.5 MB
    result, streamed = await _run(tmp_path, sys.executable, "-c", code, stream_output_limit=100_000)
    assert result.exit_code == 0 and not result.output_limit_exceeded
    output = result.output
    assert output.startswith("line 0000000\n")
    assert output.endswith("line 0499999\n")
    assert len(output) <= 32 * 1024 + 300
    assert output.count("[gatehouse] Output truncated:") == 1
    cut = 500_000 * 13 - 32 * 1024
    assert f"{cut:,} characters" in output

    notice = "[gatehouse] Live output stops here"
    assert streamed.count(notice) == 1
    before, _, after = streamed.partition(notice)
    assert len(before.encode()) <= 100_000 + 1
    assert streamed.startswith("line 0000000\n")
    assert after.count("\n") == 1  # only the notice line itself, nothing after it


async def test_kill_limit_stops_a_flood(tmp_path: Path) -> None:
    started = time.monotonic()
    result, streamed = await _run(tmp_path, "yes", kill_output_limit=1 << 20, timeout_seconds=30)
    assert time.monotonic() - started < 10
    assert result.output_limit_exceeded and not result.timed_out
    assert result.exit_code == -9
    assert "[gatehouse] Killed: the output passed 1 MiB (the output limit)." in result.output
    assert result.output.startswith("y\ny\n")
    assert "Killed: the output passed" in streamed


async def test_kill_limit_kills_flooding_grandchildren(tmp_path: Path) -> None:
    marker = _marker()
    script = f"yes & sleep {marker}"
    result, _ = await _run(tmp_path, "sh", "-c", script, kill_output_limit=1 << 20)
    assert result.output_limit_exceeded
    await _assert_gone(marker)
