"""Memory end to end over real stdio: sessions that survive a restart, what a turn changed,
rewinding it, and the audit log of who allowed what."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.e2e.conftest import StartServer, expect_error, tool_call


def gatehouse_audit(*args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "server", "audit", *args]
    return subprocess.run(argv, capture_output=True, text=True, check=False, timeout=60)


def audit_records(data_dir: Path) -> list[dict[str, Any]]:
    path = data_dir / "audit" / "audit.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


async def answer_session(_params: dict[str, Any]) -> Any:
    return {"decision": "allow_session"}


async def test_a_session_continues_after_a_restart_with_its_history_but_not_its_grants(
    start_server: StartServer,
) -> None:
    first = await start_server(
        [tool_call("terminal", command="echo one"), "First answer."], answer=answer_session
    )
    result = await first.chat("remember the word apricot")
    session_id = result["sessionId"]
    assert len(first.confirms) == 1  # asked once, then allowed for the session
    await first.stop()

    second = await start_server(
        [{"text": "You said:", "recall": True}, tool_call("terminal", command="echo two"), "Ok."]
    )
    listed = (await second.request("agent/sessions", {}))["sessions"]
    assert [(s["sessionId"], s["title"], s["turns"]) for s in listed] == [
        (session_id, "remember the word apricot", 1)
    ]
    result = await second.chat("what did I say?", sessionId=session_id)
    assert result["sessionId"] == session_id
    assert result["turnId"] == f"{session_id}:2"
    assert "remember the word apricot | what did I say?" in result["text"]
    notes = [m["text"] for m in second.of_type("status")]
    assert any("not carried over" in n and "terminal" in n for n in notes), notes

    await second.chat("run it again", sessionId=session_id)
    assert len(second.confirms) == 1, "a grant from the earlier server was revived"


async def test_loading_a_saved_session_returns_its_history(start_server: StartServer) -> None:
    first = await start_server([tool_call("terminal", command="echo hi"), "It said hi."])
    session_id = (await first.chat("say hi"))["sessionId"]
    await first.stop()

    second = await start_server([])
    loaded = await second.request("agent/session/load", {"sessionId": session_id})
    assert loaded["title"] == "say hi"
    assert loaded["allowedTools"] == []
    (turn,) = loaded["turns"]
    assert turn["prompt"] == "say hi"
    assert turn["text"] == "It said hi."
    assert turn["stopReason"] == "end_turn"
    assert turn["changedFiles"] is True
    (call,) = turn["toolCalls"]
    assert (call["name"], call["status"], call["exitCode"]) == ("terminal", "completed", 0)
    assert call["decidedBy"] == "toolConfirm"
    assert "hi" in call["result"]


async def test_deleting_a_session_removes_it_from_the_list(start_server: StartServer) -> None:
    peer = await start_server(["Hello."])
    session_id = (await peer.chat("hello"))["sessionId"]
    assert await peer.request("agent/session/delete", {"sessionId": session_id}) == {
        "deleted": True
    }
    assert (await peer.request("agent/sessions", {}))["sessions"] == []
    error = await expect_error(peer.chat("again", sessionId=session_id))
    assert "unknown session" in str(error)


async def test_changes_of_a_turn_include_what_a_command_wrote(
    start_server: StartServer, workspace: Path
) -> None:
    (workspace / "old.txt").write_text("keep me\n")
    (workspace / "notes.txt").write_text("line one\n")
    command = "echo made > new.txt && rm old.txt && echo line two >> notes.txt"
    peer = await start_server([tool_call("terminal", command=command), "Done."])
    result = await peer.chat("change things")
    changes = await peer.request(
        "agent/changes", {"sessionId": result["sessionId"], "turnId": result["turnId"]}
    )
    assert changes["checkpoint"] is True
    files = {f["path"]: f for f in changes["files"]}
    assert {p: f["action"] for p, f in files.items()} == {
        "new.txt": "created",
        "notes.txt": "modified",
        "old.txt": "deleted",
    }
    assert "+line two" in files["notes.txt"]["diff"]
    assert files["new.txt"]["diff"].startswith("--- /dev/null\n+++ b/new.txt")
    assert "-keep me" in files["old.txt"]["diff"]


async def test_a_turn_that_ran_nothing_has_no_changes(start_server: StartServer) -> None:
    peer = await start_server(["Just talking."])
    result = await peer.chat("hi")
    changes = await peer.request(
        "agent/changes", {"sessionId": result["sessionId"], "turnId": result["turnId"]}
    )
    assert changes == {**changes, "checkpoint": False, "files": []}
    error = await expect_error(
        peer.request("agent/changes", {"sessionId": result["sessionId"], "turnId": "x:9"})
    )
    assert "turnId" in str(error)


async def test_rewinding_files_undoes_the_turn_and_asks_before_overwriting_a_hand_edit(
    start_server: StartServer, workspace: Path, private_data_dir: Path
) -> None:
    (workspace / "a.txt").write_text("original a\n")
    (workspace / "b.txt").write_text("original b\n")
    command = "echo agent a > a.txt && echo agent b > b.txt && echo new > c.txt"
    peer = await start_server([tool_call("terminal", command=command), "Done."])
    result = await peer.chat("edit")
    params = {"sessionId": result["sessionId"], "turnId": result["turnId"], "scope": "files"}
    (workspace / "b.txt").write_text("my own edit\n")  # the user, by hand, after the turn

    refused = await peer.request("agent/rewind", params)
    assert refused["applied"] is False
    assert [(c["path"], c["reason"]) for c in refused["conflicts"]] == [
        ("b.txt", "changed_by_hand")
    ]
    assert (workspace / "a.txt").read_text() == "agent a\n"  # nothing was written

    done = await peer.request("agent/rewind", {**params, "force": True})
    assert done["applied"] is True
    assert sorted((f["path"], f["action"]) for f in done["files"]) == [
        ("a.txt", "restored"),
        ("b.txt", "restored"),
        ("c.txt", "deleted"),
    ]
    assert (workspace / "a.txt").read_text() == "original a\n"
    assert (workspace / "b.txt").read_text() == "original b\n"
    assert not (workspace / "c.txt").exists()
    # the refused rewind wrote nothing and left no record; the forced one is on record
    rewinds = [r for r in audit_records(private_data_dir) if r["type"].startswith("rewind")]
    kinds = [(r["type"], r.get("force")) for r in rewinds]
    assert kinds == [("rewind", True), ("rewind_end", None)]
    assert sorted(rewinds[0]["writes"]) == ["a.txt", "b.txt", "c.txt"]
    assert rewinds[0]["conflicts"] == ["b.txt"] and rewinds[0]["turn"] == result["turnId"]
    assert sorted(w["path"] for w in rewinds[1]["written"]) == ["a.txt", "b.txt", "c.txt"]


async def test_rewinding_leaves_files_the_user_alone_touched(
    start_server: StartServer, workspace: Path
) -> None:
    peer = await start_server([tool_call("terminal", command="echo x > made.txt"), "Done."])
    result = await peer.chat("make")
    (workspace / "mine.txt").write_text("the user's own file\n")
    done = await peer.request(
        "agent/rewind",
        {"sessionId": result["sessionId"], "turnId": result["turnId"], "scope": "files"},
    )
    assert done["applied"] is True
    assert [f["path"] for f in done["files"]] == ["made.txt"]
    assert (workspace / "mine.txt").read_text() == "the user's own file\n"


async def test_rewind_never_writes_through_a_symbolic_link_out_of_the_workspace(
    start_server: StartServer, workspace: Path, tmp_path: Path
) -> None:
    (workspace / "sub").mkdir()
    (workspace / "sub" / "f.txt").write_text("original\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    peer = await start_server([tool_call("terminal", command="echo changed > sub/f.txt"), "Ok."])
    result = await peer.chat("edit")
    (workspace / "sub" / "f.txt").unlink()
    (workspace / "sub").rmdir()
    os.symlink(outside, workspace / "sub")  # swapped for a link after the turn
    done = await peer.request(
        "agent/rewind",
        {
            "sessionId": result["sessionId"],
            "turnId": result["turnId"],
            "scope": "files",
            "force": True,
        },
    )
    assert done["files"] == []
    assert [s["path"] for s in done["skipped"]] == ["sub/f.txt"]
    assert "symbolic link" in done["skipped"][0]["detail"]
    assert list(outside.iterdir()) == []


async def test_rewinding_the_conversation_makes_the_model_forget_the_turn(
    start_server: StartServer,
) -> None:
    peer = await start_server(["One.", "Two.", {"text": "Seen:", "recall": True}])
    first = await peer.chat("first")
    second = await peer.chat("second", sessionId=first["sessionId"])
    rewound = await peer.request(
        "agent/rewind",
        {"sessionId": first["sessionId"], "turnId": second["turnId"], "scope": "conversation"},
    )
    assert rewound["conversation"] is True
    third = await peer.chat("third", sessionId=first["sessionId"])
    assert third["text"].endswith("first | third")
    loaded = await peer.request("agent/session/load", {"sessionId": first["sessionId"]})
    assert [t["rewound"] for t in loaded["turns"]] == [False, True, False]


async def test_the_audit_log_says_who_allowed_each_command_and_verifies(
    start_server: StartServer, private_data_dir: Path
) -> None:
    secret = "ghp_" + "a" * 36
    peer = await start_server(
        [tool_call("terminal", command=f"echo {secret} > /dev/null"), "Done."]
    )
    result = await peer.chat("go")
    records = audit_records(private_data_dir)
    kinds = [(r["type"], r.get("decidedBy")) for r in records]
    assert kinds == [
        ("approval_request", None),
        ("approval", "toolConfirm"),
        ("execution", "toolConfirm"),
        ("execution_end", None),
    ]
    request, execution = records[0], records[2]
    assert request["arguments"] == {"command": "echo [secret masked] > /dev/null"}
    assert request["reason"] == "code_execution"
    assert execution["arguments"] == {"command": "echo [secret masked] > /dev/null"}
    assert secret not in (private_data_dir / "audit" / "audit.jsonl").read_text()
    assert len(execution["sha256"]) == 64 and execution["sha256"] == request["sha256"]
    assert execution["isolation"] in ("strong", "standard", "limits-only", "none")
    assert records[3]["exitCode"] == 0
    assert [r["seq"] for r in records] == [0, 1, 2, 3]

    session_id = result["sessionId"]
    shown = gatehouse_audit("show", "--session", session_id)
    assert shown.returncode == 0, shown.stderr
    assert "asked (code_execution)" in shown.stdout
    assert "allow by toolConfirm" in shown.stdout
    assert "echo [secret masked] > /dev/null" in shown.stdout
    assert "exit 0" in shown.stdout and secret not in shown.stdout
    other = gatehouse_audit("show", "--session", "s_0000000000000000")
    assert "No matching audit records" in other.stdout


async def test_code_is_refused_when_its_audit_record_cannot_be_written(
    start_server: StartServer, private_data_dir: Path, workspace: Path
) -> None:
    (private_data_dir / "audit").write_text("not a folder")  # the log cannot be created
    peer = await start_server([tool_call("terminal", command="touch ran.txt"), "It was refused."])
    result = await peer.chat("go")
    (call,) = result["toolCalls"]
    assert call["status"] == "failed"
    (end,) = peer.of_type("tool_end")
    assert "audit record could not be written" in end["result"]
    assert not (workspace / "ran.txt").exists()
    status = await peer.request("agent/status", {})  # the server keeps serving
    assert status["sessions"][0]["sessionId"] == result["sessionId"]


async def test_an_unusable_data_folder_is_a_clear_error_and_the_server_keeps_serving(
    start_server: StartServer, private_data_dir: Path
) -> None:
    (private_data_dir / "workspaces").write_text("not a folder")
    peer = await start_server(["Hello."])
    result = await peer.chat("hi")
    assert result["text"] == "Hello."
    assert any("not being saved" in m["text"] for m in peer.of_type("status"))
    error = await expect_error(peer.request("agent/sessions", {}))
    assert "data folder" in str(error)
    assert (await peer.request("agent/status", {}))["version"]


async def test_rewinding_again_to_an_earlier_turn_does_not_call_the_first_rewind_a_hand_edit(
    start_server: StartServer, workspace: Path
) -> None:
    (workspace / "a.txt").write_text("zero\n")
    peer = await start_server(
        [
            tool_call("terminal", command="echo one > a.txt"),
            "One.",
            tool_call("terminal", command="echo two > a.txt"),
            "Two.",
        ]
    )
    first = await peer.chat("first")
    session_id = first["sessionId"]
    second = await peer.chat("second", sessionId=session_id)
    undo_second = await peer.request(
        "agent/rewind", {"sessionId": session_id, "turnId": second["turnId"], "scope": "files"}
    )
    assert undo_second["applied"] and (workspace / "a.txt").read_text() == "one\n"
    undo_first = await peer.request(
        "agent/rewind", {"sessionId": session_id, "turnId": first["turnId"], "scope": "files"}
    )
    assert undo_first["conflicts"] == []
    assert undo_first["applied"] and (workspace / "a.txt").read_text() == "zero\n"


async def test_an_approved_edit_is_checkpointed_audited_and_undone_by_rewind(
    start_server: StartServer, workspace: Path, private_data_dir: Path
) -> None:
    (workspace / "notes.txt").write_text("one\ntwo\n")
    edit = tool_call("edit_file", path="notes.txt", old_text="two", new_text="2")
    peer = await start_server([tool_call("read_file", path="notes.txt"), edit, "Done."])
    result = await peer.chat("edit the notes")
    assert (workspace / "notes.txt").read_text() == "one\n2\n"
    turn = {"sessionId": result["sessionId"], "turnId": result["turnId"]}

    changes = await peer.request("agent/changes", turn)
    assert changes["checkpoint"] is True
    [change] = changes["files"]
    assert (change["path"], change["action"]) == ("notes.txt", "modified")
    assert "-two\n+2" in change["diff"]
    executions = [r for r in audit_records(private_data_dir) if r["type"] == "execution"]
    assert [(r["tool"], r["decidedBy"]) for r in executions] == [
        ("read_file", "not_required"),
        ("edit_file", "toolConfirm"),
    ]

    done = await peer.request("agent/rewind", {**turn, "scope": "files"})
    assert done["applied"] is True
    assert (workspace / "notes.txt").read_text() == "one\ntwo\n"


async def test_the_audit_log_names_the_session_grant_and_the_rule_that_let_a_call_through(
    start_server: StartServer, workspace: Path, private_data_dir: Path
) -> None:
    (workspace / ".gatehouse").mkdir()
    (workspace / ".gatehouse" / "rules.toml").write_text(
        '[[rule]]\naction = "deny"\ntool = "terminal"\npattern = "rm *"\n'
    )
    turns = [
        tool_call("terminal", command="touch a.txt"),
        tool_call("terminal", command="touch b.txt"),
        tool_call("terminal", command="rm a.txt"),
        "Done.",
    ]
    peer = await start_server(turns, answer=answer_session)
    await peer.chat("go")
    decided = [
        (r["decision"], r["decidedBy"], "ruleId" in r)
        for r in audit_records(private_data_dir)
        if r["type"] == "approval"
    ]
    assert decided == [
        ("allow_session", "toolConfirm", False),  # the person granted `touch *`
        ("allow", "session_grant", True),  # the grant let the second touch through
        ("deny", "rule", True),  # the workspace's deny rule stopped the rm
    ]
    assert (workspace / "a.txt").exists() and (workspace / "b.txt").exists()
