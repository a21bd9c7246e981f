"""``gatehouse chat`` end to end: the real command, a real server child, the scripted backend."""

from __future__ import annotations

import asyncio
import json
import os
import pty
import re
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.connection import (
    ConnectionLost,
    ErrorResponse,
    RpcClient,
    encode_message,
    read_message,
)

TIMEOUT = 60.0
ANSI = re.compile(r"\x1b\[[0-9;]*m")
TOUCH_TURN = (
    "Sure, creating it. "
    '<tool_call>{"name": "terminal", "arguments": {"command": "touch made.txt"}}</tool_call>'
)
pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX terminals and signals")


def gatehouse() -> list[str]:
    script = Path(sys.executable).parent / "gatehouse"
    return [str(script)] if script.exists() else [sys.executable, "-m", "server"]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


@pytest.fixture
def script(tmp_path: Path) -> Callable[..., Path]:
    def write(*turns: Any) -> Path:
        path = tmp_path / "script.json"
        path.write_text(json.dumps({"turns": list(turns)}), encoding="utf-8")
        return path

    return write


def chat_argv(workspace: Path, script: Path, *extra: str) -> list[str]:
    return [
        *gatehouse(), "chat", *extra, "--backend", "scripted", "--script", str(script),
        "--workspace", str(workspace), "--log-level", "WARNING",
    ]  # fmt: skip


def run(
    argv: list[str], stdin: str | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv,
        cwd=cwd,
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )


def children_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def is_gone(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


# --- one-shot prompts ----------------------------------------------------------------------------


def test_allow_runs_the_command(workspace: Path, script: Callable[..., Path]) -> None:
    s = script(TOUCH_TURN, "All done.")
    proc = run(chat_argv(workspace, s, "make a file", "--approve", "allow"))
    assert proc.returncode == 0, proc.stderr
    assert (workspace / "made.txt").exists()
    assert "Sure, creating it." in proc.stdout
    assert "All done." in proc.stdout
    assert "touch made.txt" in proc.stdout
    assert "--approve allow" in proc.stdout  # says it answered automatically
    assert "isolation:" in proc.stdout
    assert "✓ terminal exited 0" in proc.stdout


def test_deny_does_not_run_it(workspace: Path, script: Callable[..., Path]) -> None:
    s = script(TOUCH_TURN, "Fine, I won't.")
    proc = run(chat_argv(workspace, s, "make a file", "--approve", "deny"))
    assert proc.returncode == 0, proc.stderr
    assert not (workspace / "made.txt").exists()
    assert "✗ terminal denied" in proc.stdout
    assert "Fine, I won't." in proc.stdout


def test_ask_without_a_terminal_denies_and_says_why(
    workspace: Path, script: Callable[..., Path]
) -> None:
    s = script(TOUCH_TURN, "Okay.")
    proc = run(chat_argv(workspace, s, "make a file", "--approve", "ask"))
    assert proc.returncode == 0, proc.stderr
    assert not (workspace / "made.txt").exists()
    assert "no terminal to ask on: denied; use --approve allow to allow" in proc.stdout
    assert "denied" in proc.stdout


def test_json_mode_prints_only_json_lines(workspace: Path, script: Callable[..., Path]) -> None:
    s = script(TOUCH_TURN, "Done.")
    proc = run(chat_argv(workspace, s, "make a file", "--approve", "allow", "--json"))
    assert proc.returncode == 0, proc.stderr
    records = [json.loads(line) for line in proc.stdout.splitlines()]
    assert records and all(r["direction"] == "server->client" for r in records)
    confirms = [r for r in records if r["kind"] == "request" and r["method"] == "toolConfirm"]
    assert len(confirms) == 1
    assert confirms[0]["id"] is not None
    assert confirms[0]["params"]["sandbox"].keys() >= {"level", "network"}
    ends = [
        r["params"] for r in records
        if r["kind"] == "notification" and r["params"].get("type") == "tool_end"
    ]  # fmt: skip
    assert [(e["name"], e["status"], e["exitCode"]) for e in ends] == [("terminal", "completed", 0)]
    assert records[-1]["kind"] == "result"
    assert records[-1]["result"]["stopReason"] == "end_turn"
    assert (workspace / "made.txt").exists()


def test_error_response_exits_1_with_the_message(workspace: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    proc = run(chat_argv(workspace, bad, "hello", "--approve", "deny"))
    assert proc.returncode == 1
    assert "not valid JSON" in proc.stderr


def test_usage_errors_exit_2(workspace: Path, tmp_path: Path) -> None:
    proc = run(chat_argv(workspace, tmp_path / "missing.json", "hello"))
    assert proc.returncode == 2
    assert "no such script file" in proc.stderr


# --- the REPL ------------------------------------------------------------------------------------


def test_repl_keeps_the_session_and_new_starts_another(
    workspace: Path, script: Callable[..., Path]
) -> None:
    s = script("First answer.", "Second answer.", "Third answer.")
    proc = run(chat_argv(workspace, s, "--json"), stdin="one\ntwo\n/new\nthree\n/quit\nnever\n")
    assert proc.returncode == 0, proc.stderr
    results = [
        json.loads(line)["result"] for line in proc.stdout.splitlines()
        if json.loads(line)["kind"] == "result"
    ]  # fmt: skip
    assert [r["text"] for r in results] == ["First answer.", "Second answer.", "Third answer."]
    assert results[0]["sessionId"] == results[1]["sessionId"] != results[2]["sessionId"]


def test_repl_ends_at_end_of_input(workspace: Path, script: Callable[..., Path]) -> None:
    proc = run(chat_argv(workspace, script("Hello there.")), stdin="hi\n")
    assert proc.returncode == 0, proc.stderr
    assert "Hello there." in proc.stdout
    assert "> " in proc.stdout


# --- memory: saved sessions, changes, rewind ------------------------------------------------------


def test_continue_picks_up_the_last_session_with_its_history(
    workspace: Path, script: Callable[..., Path]
) -> None:
    first = run(chat_argv(workspace, script("Noted."), "remember the word apricot"))
    assert first.returncode == 0, first.stderr
    recall = script({"text": "You said:", "recall": True})
    proc = run(chat_argv(workspace, recall, "what did I say?", "--continue"))
    assert proc.returncode == 0, proc.stderr
    assert "Resumed: remember the word apricot" in proc.stdout
    assert "remember the word apricot | what did I say?" in proc.stdout
    assert "not carried over" in proc.stdout


def test_resume_of_an_unknown_session_is_an_error(
    workspace: Path, script: Callable[..., Path]
) -> None:
    proc = run(chat_argv(workspace, script("never"), "hi", "--resume", "s_0000000000000000"))
    assert proc.returncode == 1
    assert "unknown session" in proc.stdout + proc.stderr


def test_repl_lists_sessions_shows_changes_and_rewinds_a_turn(
    workspace: Path, script: Callable[..., Path]
) -> None:
    s = script(TOUCH_TURN, "All done.")
    proc = run(
        chat_argv(workspace, s, "--approve", "allow"),
        stdin="make a file\n/changes\n/sessions\n/rewind files\n/quit\n",
    )
    assert proc.returncode == 0, proc.stderr
    out = ANSI.sub("", proc.stdout)
    assert "created: made.txt" in out
    assert "1. make a file" in out
    assert "deleted: made.txt" in out
    assert not (workspace / "made.txt").exists()


# --- a terminal ----------------------------------------------------------------------------------


class Terminal:
    """The harness on a pseudo-terminal: what a person would see and type."""

    def __init__(self, argv: list[str]) -> None:
        master, slave = pty.openpty()
        self.master = master
        self.proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave)
        os.close(slave)
        self.seen = ""

    def read_until(self, text: str) -> str:
        deadline = time.monotonic() + TIMEOUT
        while text not in ANSI.sub("", self.seen):
            left = deadline - time.monotonic()
            assert left > 0, f"never saw {text!r}; saw:\n{self.seen}"
            if not select.select([self.master], [], [], left)[0]:
                continue
            try:
                data = os.read(self.master, 4096)
            except OSError:  # EIO: the other side is closed
                data = b""
            assert data, f"output ended before {text!r}; saw:\n{self.seen}"
            self.seen += data.decode("utf-8", errors="replace")
        return ANSI.sub("", self.seen)

    def type(self, text: str) -> None:
        os.write(self.master, text.encode())

    def finish(self) -> int:
        try:
            while select.select([self.master], [], [], TIMEOUT)[0]:
                data = os.read(self.master, 4096)
                if not data:
                    break
                self.seen += data.decode("utf-8", errors="replace")
        except OSError:
            pass
        code = self.proc.wait(timeout=TIMEOUT)
        os.close(self.master)
        return code


def test_ask_on_a_terminal(workspace: Path, script: Callable[..., Path]) -> None:
    s = script(TOUCH_TURN, "Made it.")
    term = Terminal(chat_argv(workspace, s, "make a file", "--approve", "ask"))
    term.read_until("Enter = deny")
    assert not (workspace / "made.txt").exists()
    term.type("y\n")
    assert term.finish() == 0, term.seen
    assert (workspace / "made.txt").exists()
    assert "✓ terminal exited 0" in ANSI.sub("", term.seen)
    assert "Made it." in term.seen


def test_the_prompt_offers_the_scoped_choices_and_always_remembers_the_rule(
    workspace: Path, script: Callable[..., Path]
) -> None:
    s = script(TOUCH_TURN, "Made it.")
    term = Terminal(chat_argv(workspace, s, "make a file", "--approve", "ask"))
    seen = term.read_until("Enter = deny")
    assert "[n] Deny   [y] Allow once   [s] Allow `touch *` in this session" in seen
    assert "[a] Always allow `touch *` in this workspace" in seen
    term.type("a\n")
    assert term.finish() == 0, term.seen
    assert (workspace / "made.txt").exists()

    # the next `gatehouse chat` in this workspace lists it, and /rules remove takes it away
    listed = run(chat_argv(workspace, script("unused")), stdin="/rules\n/quit\n")
    assert listed.returncode == 0, listed.stderr
    line = next(x for x in listed.stdout.splitlines() if "touch *" in x)
    assert "allow terminal `touch *`" in line and "yours, this workspace" in line
    rule_id = line.split()[0]
    removed = run(
        chat_argv(workspace, script("unused")), stdin=f"/rules remove {rule_id}\n/rules\n"
    )
    assert f"removed {rule_id}" in removed.stdout
    assert "`touch *`" not in removed.stdout.split("removed", 1)[1].split("\n", 1)[1]


def test_ctrl_c_at_the_prompt_withdraws_it(workspace: Path, script: Callable[..., Path]) -> None:
    s = script(TOUCH_TURN, "Never said.")
    term = Terminal(chat_argv(workspace, s, "make a file", "--approve", "ask"))
    term.read_until("Enter = deny")
    term.proc.send_signal(signal.SIGINT)
    term.read_until("withdrawn: it did not run)")
    term.type("y\n")  # too late: nobody is asking any more
    assert term.finish() == 130, term.seen
    assert not (workspace / "made.txt").exists()


# --- what approved code leaves in the workspace, and what the model writes ------------------------


@pytest.mark.parametrize("layout", ["package", "module"])
def test_a_server_package_planted_in_the_workspace_never_runs_on_the_host(
    workspace: Path, script: Callable[..., Path], tmp_path: Path, layout: str
) -> None:
    # What one approved command could leave behind; the next `gatehouse chat` in that folder
    # must still start the real server, not this (which would run unsandboxed, as the user).
    canary = tmp_path / "canary"
    payload = f"open({str(canary)!r}, 'w').write('ran')\n"
    if layout == "package":
        (workspace / "server").mkdir()
        (workspace / "server" / "__init__.py").write_text(payload)
        (workspace / "server" / "__main__.py").write_text(payload)
    else:
        (workspace / "server.py").write_text(payload)
    s = script("The real server answered.")
    proc = run(chat_argv(workspace, s, "hello"), cwd=workspace)
    assert proc.returncode == 0, proc.stderr
    assert "The real server answered." in proc.stdout
    assert not canary.exists()


SNEAKY = "touch hidden_ran.txt #\x1b[2K\x1b[1G  $ ls -la"


def test_escape_codes_in_a_command_are_shown_not_obeyed(
    workspace: Path, script: Callable[..., Path]
) -> None:
    call = json.dumps({"name": "terminal", "arguments": {"command": SNEAKY}})
    s = script(f"<tool_call>{call}</tool_call>", "Done \x1b[2J\u202eevil")
    term = Terminal(chat_argv(workspace, s, "list files", "--approve", "ask"))
    seen = term.read_until("Enter = deny")
    # the person sees the whole command, escapes written out, and is warned
    assert "touch hidden_ran.txt #\\x1b[2K\\x1b[1G  $ ls -la" in seen
    assert "hidden or control characters" in seen
    assert "\x1b[2K" not in term.seen and "\x1b[1G" not in term.seen
    term.type("y\n")
    assert term.finish() == 0, term.seen
    # what was shown is what ran, and the model's answer cannot clear the screen or flip text
    assert (workspace / "hidden_ran.txt").exists()
    assert "\x1b[2J" not in term.seen and "\u202e" not in term.seen
    assert "Done \\x1b[2J<U+202E>evil" in ANSI.sub("", term.seen)


def test_escape_codes_in_command_output_are_shown_not_obeyed(
    workspace: Path, script: Callable[..., Path]
) -> None:
    call = json.dumps({"name": "terminal", "arguments": {"command": "printf 'a\\033[2Jb\\n'"}})
    s = script(f"<tool_call>{call}</tool_call>", "ok")
    proc = run(chat_argv(workspace, s, "go", "--approve", "allow"))
    assert proc.returncode == 0, proc.stderr
    assert "a\\x1b[2Jb" in proc.stdout
    assert "\x1b[2J" not in proc.stdout


def test_an_auto_run_path_planted_by_a_command_is_reported(
    workspace: Path, script: Callable[..., Path]
) -> None:
    command = "mkdir .vscode && echo '{}' > .vscode/tasks.json"
    call = json.dumps({"name": "terminal", "arguments": {"command": command}})
    s = script(f"<tool_call>{call}</tool_call>", "ok")
    proc = run(chat_argv(workspace, s, "go", "--approve", "allow"))
    assert proc.returncode == 0, proc.stderr
    assert not (workspace / ".vscode").exists()
    assert "! .vscode: quarantined" in proc.stdout


# --- Ctrl-C --------------------------------------------------------------------------------------


def test_ctrl_c_cancels_the_turn_and_exits_130(
    workspace: Path, script: Callable[..., Path]
) -> None:
    long_text = " ".join(f"word{i}" for i in range(2000))
    s = script({"text": long_text, "chunkDelayMs": 50})
    proc = subprocess.Popen(
        chat_argv(workspace, s, "talk a lot", "--approve", "deny"),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.read(10)  # the turn is streaming
        servers = children_of(proc.pid)
        assert servers, "the harness has no server child"
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    deadline = time.monotonic() + TIMEOUT
    while not all(is_gone(pid) for pid in servers):
        assert time.monotonic() < deadline, "the server child outlived the harness"
        time.sleep(0.05)


def test_a_server_crash_exits_1_and_says_so(workspace: Path, script: Callable[..., Path]) -> None:
    s = script({"text": " ".join(f"word{i}" for i in range(2000)), "chunkDelayMs": 50})
    proc = subprocess.Popen(
        chat_argv(workspace, s, "talk a lot"),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.read(10)
        servers = children_of(proc.pid)
        assert servers
        for pid in servers:
            os.kill(pid, signal.SIGKILL)
        _out, err = proc.communicate(timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1
    assert "the server exited unexpectedly" in err.decode()


# --- the client on its own -----------------------------------------------------------------------


async def test_rpc_client_round_trip(workspace: Path, script: Callable[..., Path]) -> None:
    s = script("Plain answer with ünïcode ✓.")
    client = RpcClient()
    streamed: list[str] = []
    client.on_notification(
        "agent/stream",
        lambda p: streamed.append(p["text"]) if p.get("type") == "content" else None,
    )
    argv = [sys.executable, "-m", "server", "--backend", "scripted", "--script", str(s)]
    await client.start([*argv, "--workspace", str(workspace), "--log-level", "WARNING"])
    try:
        init = await client.request("initialize", {"processId": None, "capabilities": {}})
        assert "gatehouse" in init["capabilities"]["experimental"]
        client.notify("initialized", {})
        result = await client.request("agent/chat", {"prompt": "hi", "enableTools": False})
        assert result["text"] == "Plain answer with ünïcode ✓."
        assert "".join(streamed) == result["text"]
        with pytest.raises(ErrorResponse) as info:
            await client.request("agent/chat", {"prompt": "hi", "bogus": 1})
        assert info.value.code == -32602
        client.send_raw(b"Content-Length: 9\r\n\r\n{garbage}")
        with pytest.raises(ErrorResponse):
            await client.request("agent/cancel", {"sessionId": "nope"})
    finally:
        assert await client.close() == 0


async def test_rpc_client_fails_pending_requests_when_the_server_dies() -> None:
    client = RpcClient()
    crash = "import sys; sys.stdin.buffer.read(1); sys.exit(3)"
    await client.start([sys.executable, "-c", crash])
    with pytest.raises(ConnectionLost):
        await client.request("initialize", {})
    assert await client.close() == 3


async def test_framing_counts_bytes_and_skips_junk() -> None:
    body = json.dumps({"jsonrpc": "2.0", "method": "m", "params": {"t": "ünï ✓"}}).encode()
    reader = asyncio.StreamReader()
    reader.feed_data(b"Content-Type: x\r\n\r\n")  # no length: skipped
    reader.feed_data(b"Content-Length: 3\r\n\r\n{x}")  # not JSON: skipped
    reader.feed_data(b"content-length: %d\r\n\r\n" % len(body) + body)
    reader.feed_eof()
    assert await read_message(reader) == json.loads(body)
    with pytest.raises(asyncio.IncompleteReadError):
        await read_message(reader)
    assert encode_message({"a": "é"}) == b'Content-Length: 10\r\n\r\n{"a":"\xc3\xa9"}'


def test_an_edit_is_asked_about_as_a_coloured_diff_with_hidden_characters_shown(
    workspace: Path, script: Callable[..., Path]
) -> None:
    (workspace / "notes.txt").write_text("one\ntwo\nthree\n")
    read = json.dumps({"name": "read_file", "arguments": {"path": "notes.txt"}})
    sneaky = "2 \u202e# fine\x1b[2K"
    edit = json.dumps(
        {
            "name": "edit_file",
            "arguments": {"path": "notes.txt", "old_text": "two", "new_text": sneaky},
        }
    )
    s = script(f"<tool_call>{read}</tool_call>", f"<tool_call>{edit}</tool_call>", "Edited.")
    term = Terminal(chat_argv(workspace, s, "edit it", "--approve", "ask"))
    seen = term.read_until("(Enter = deny)")
    assert "✎ notes.txt: modify (+1 -1)" in seen
    assert "--- a/notes.txt" in seen and "@@ -1,3 +1,3 @@" in seen
    assert "-two\n" in seen.replace("\r\n", "\n")
    assert "+2 <U+202E># fine\\x1b[2K" in seen  # the display rule applies to diffs
    assert "hidden or control characters" in seen
    assert "\x1b[32m" in term.seen and "\x1b[31m" in term.seen  # + green, - red
    assert "\u202e" not in term.seen and "\x1b[2K" not in term.seen
    assert (workspace / "notes.txt").read_text() == "one\ntwo\nthree\n"
    term.type("y\n")
    assert term.finish() == 0, term.seen
    assert (workspace / "notes.txt").read_text() == f"one\n{sneaky}\nthree\n"
    assert "✓ edit_file done" in ANSI.sub("", term.seen)
