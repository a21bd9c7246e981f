"""Edits over real stdio: the diff a person reviews, and what is on disk after every answer."""

from __future__ import annotations

import itertools
from typing import Any

from lsprotocol import types as lsp

from tests.e2e.conftest import (
    MESSAGE_REQUEST_CAPS,
    NO_PROMPT_CAPS,
    Peer,
    StartServer,
    expect_error,
    tool_call,
)

NOTES = "one\ntwo\nthree\n"
READ = tool_call("read_file", path="notes.txt")
EDIT = tool_call("edit_file", path="notes.txt", old_text="two", new_text="2")


async def start(start_server: StartServer, turns: list[Any], **kwargs: Any) -> Peer:
    peer = await start_server(turns, **kwargs)
    (peer.workspace / "notes.txt").write_text(NOTES)
    return peer


def on_disk(peer: Peer) -> str:
    return (peer.workspace / "notes.txt").read_text()


async def test_an_allowed_edit_is_written_after_the_prompt_and_never_before(
    start_server: StartServer,
) -> None:
    peer = await start(start_server, [READ, EDIT, "Done."])
    at_prompt: list[str] = []

    async def allow(params: dict[str, Any]) -> Any:
        at_prompt.append(on_disk(peer))
        return {"decision": "allow", "approvalId": params["approvalId"]}

    peer.answer = allow
    result = await peer.chat()

    assert at_prompt == [NOTES]
    assert on_disk(peer) == "one\n2\nthree\n"
    [confirm] = peer.confirms
    assert (confirm["name"], confirm["reason"]) == ("edit_file", "file_edit")
    assert confirm["edits"] == [
        {
            "path": "notes.txt",
            "action": "modify",
            "diff": "--- a/notes.txt\n+++ b/notes.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n",
        }
    ]
    end = peer.of_type("tool_end")[-1]
    assert end["status"] == "completed"
    assert end["edits"] == [{**confirm["edits"][0], "userEdited": False}]
    assert [c["status"] for c in result["toolCalls"]] == ["completed", "completed"]


async def test_a_denied_edit_changes_nothing_and_the_model_hears_why(
    start_server: StartServer,
) -> None:
    async def deny(_params: dict[str, Any]) -> Any:
        return {"decision": "deny", "message": "keep the word"}

    peer = await start(start_server, [READ, EDIT, "OK."], answer=deny)
    result = await peer.chat()
    assert on_disk(peer) == NOTES
    end = peer.of_type("tool_end")[-1]
    assert end["status"] == "denied" and "keep the word" in end["result"]
    assert "edits" not in end
    assert result["toolCalls"][-1]["status"] == "denied"


async def test_the_users_own_version_is_written_and_the_model_is_told(
    start_server: StartServer,
) -> None:
    async def mine(_params: dict[str, Any]) -> Any:
        return {
            "decision": "allow",
            "edits": [{"path": "notes.txt", "content": "one\nII\nthree\n"}],
        }

    peer = await start(start_server, [READ, EDIT, "OK."], answer=mine)
    await peer.chat()
    assert on_disk(peer) == "one\nII\nthree\n"
    end = peer.of_type("tool_end")[-1]
    assert end["edits"][0]["userEdited"] is True and "+II" in end["edits"][0]["diff"]
    assert "The user changed your proposal" in end["result"] and "-2\n+II" in end["result"]


async def test_a_version_of_a_file_the_call_does_not_change_fails_closed(
    start_server: StartServer,
) -> None:
    async def other(_params: dict[str, Any]) -> Any:
        return {"decision": "allow", "edits": [{"path": "../elsewhere", "content": "x"}]}

    peer = await start(start_server, [READ, EDIT, "OK."], answer=other)
    result = await peer.chat()
    assert on_disk(peer) == NOTES
    assert result["toolCalls"][-1]["status"] == "denied"
    assert "malformed" in peer.of_type("tool_end")[-1]["result"]


async def test_a_file_changed_while_the_prompt_is_open_is_not_written(
    start_server: StartServer,
) -> None:
    peer = await start(start_server, [READ, EDIT, "I will read it again."])

    async def change_then_allow(_params: dict[str, Any]) -> Any:
        (peer.workspace / "notes.txt").write_text("one\ntwo\nthree\nfour\n")
        return {"decision": "allow"}

    peer.answer = change_then_allow
    result = await peer.chat()
    assert on_disk(peer) == "one\ntwo\nthree\nfour\n"
    end = peer.of_type("tool_end")[-1]
    assert end["status"] == "failed" and "Nothing was written" in end["result"]
    assert "read it again" in end["result"]
    assert result["toolCalls"][-1]["status"] == "failed"


async def test_an_edit_of_a_file_with_unsaved_changes_in_the_editor_is_refused(
    start_server: StartServer,
) -> None:
    peer = await start(start_server, [READ, EDIT, "Saved?", EDIT, "Done."])
    uri = (peer.workspace / "notes.txt").as_uri()
    document = lsp.TextDocumentItem(uri=uri, language_id="plaintext", version=1, text=NOTES)
    peer.client.text_document_did_open(lsp.DidOpenTextDocumentParams(text_document=document))
    typed = lsp.TextDocumentContentChangePartial(
        range=lsp.Range(
            start=lsp.Position(line=0, character=3), end=lsp.Position(line=0, character=3)
        ),
        text="!",
    )
    peer.client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[typed],
        )
    )
    first = await peer.chat()
    assert peer.confirms == []  # refused before anyone is asked
    end = peer.of_type("tool_end")[-1]
    assert end["status"] == "failed" and "unsaved changes" in end["result"]
    assert on_disk(peer) == NOTES

    # The user undoes the typing: the editor shows the file as it is, and the edit goes through.
    undo = lsp.TextDocumentContentChangeWholeDocument(text=NOTES)
    peer.client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=3),
            content_changes=[undo],
        )
    )
    await peer.chat("again", sessionId=first["sessionId"])
    assert on_disk(peer) == "one\n2\nthree\n"


async def test_unsaved_changes_are_seen_in_a_file_whose_uri_is_percent_encoded(
    start_server: StartServer,
) -> None:
    name = "my notes é#1.txt"  # the editor's URI escapes the space, the é and the #
    read = tool_call("read_file", path=name)
    edit = tool_call("edit_file", path=name, old_text="two", new_text="2")
    peer = await start(start_server, [read, edit, "Saved?"])
    (peer.workspace / name).write_text(NOTES)
    uri = (peer.workspace / name).as_uri()
    assert "%20" in uri and "%C3%A9" in uri and "%23" in uri
    unsaved = NOTES.replace("three", "three!")
    document = lsp.TextDocumentItem(uri=uri, language_id="plaintext", version=1, text=unsaved)
    peer.client.text_document_did_open(lsp.DidOpenTextDocumentParams(text_document=document))
    await peer.chat()
    assert peer.confirms == []
    end = peer.of_type("tool_end")[-1]
    assert end["status"] == "failed" and "unsaved changes" in end["result"]
    assert (peer.workspace / name).read_text() == NOTES


async def test_the_fallback_prompt_shows_the_diff_and_denies_what_it_cannot_show(
    start_server: StartServer,
) -> None:
    long_text = "".join(f"line {i}\n" for i in range(400))
    turns = [
        READ,
        EDIT,
        tool_call("write_file", path="long.txt", content=long_text),
        "Done.",
    ]
    seen: list[Any] = []

    async def pick(params: dict[str, Any]) -> Any:
        seen.append(params)
        titles = [a.title for a in params["actions"]]
        return lsp.MessageActionItem(title="Allow once" if "Allow once" in titles else "Deny")

    peer = await start(start_server, turns, capabilities=MESSAGE_REQUEST_CAPS, answer=pick)
    result = await peer.chat()
    short, long = seen
    assert [a.title for a in short["actions"]][:2] == ["Deny", "Allow once"]  # Deny first
    assert "notes.txt | +1 -1 (modify)" in short["message"]
    assert "-two\n+2" in short["message"]
    assert [a.title for a in long["actions"]] == ["Deny"]  # too long to review there
    assert "long.txt | +400 -0 (create)" in long["message"] and "too long" in long["message"]
    assert on_disk(peer) == "one\n2\nthree\n"
    assert not (peer.workspace / "long.txt").exists()
    assert [c["status"] for c in result["toolCalls"]] == ["completed", "completed", "denied"]


async def test_an_auto_run_path_is_asked_about_even_after_allow_for_session(
    start_server: StartServer,
) -> None:
    answers = iter(["allow_session", "deny"])

    async def answer(_params: dict[str, Any]) -> Any:
        return {"decision": next(answers)}

    hook = tool_call("write_file", path=".vscode/tasks.json", content="{}\n")
    again = tool_call("edit_file", path="notes.txt", old_text="one", new_text="1")
    peer = await start(start_server, [READ, EDIT, again, hook, "Done."], answer=answer)
    await peer.chat()
    assert [(c["name"], c["reason"]) for c in peer.confirms] == [
        ("edit_file", "file_edit"),
        ("write_file", "protected_path"),
    ]
    assert "VS Code" in peer.confirms[1]["edits"][0]["protected"]
    assert on_disk(peer) == "1\n2\nthree\n"
    assert not (peer.workspace / ".vscode").exists()


# --- the gate's formula over the wire, every flag combination ---------------------------------

FLAG_NAMES = ("confirmToolCalls", "confirmCodeExecution", "confirmFileEdits", "bypassPermissions")


def expected_prompts(ctc: bool, cce: bool, cfe: bool, bypass: bool) -> list[str]:
    """Which of terminal, read_file and write_file the user is asked about (the formula)."""
    if bypass:
        return []
    asked = []
    if ctc or cce:
        asked.append("terminal")
    if ctc:
        asked.append("read_file")
    if ctc or cfe:
        asked.append("write_file")
    return asked


async def test_every_flag_combination_asks_exactly_what_the_formula_says(
    start_server: StartServer,
) -> None:
    combos = list(itertools.product((False, True), repeat=4))
    turns: list[Any] = []
    for n in range(len(combos)):
        turns += [
            tool_call("terminal", command=f"echo {n}"),
            tool_call("read_file", path="notes.txt"),
            tool_call("write_file", path=f"out/{n}.txt", content=f"{n}\n"),
            "done",
        ]
    peer = await start(start_server, turns)
    for n, flags in enumerate(combos):
        before = len(peer.confirms)
        result = await peer.chat(**dict(zip(FLAG_NAMES, flags, strict=True)))
        asked = [c["name"] for c in peer.confirms[before:]]
        assert asked == expected_prompts(*flags), dict(zip(FLAG_NAMES, flags, strict=True))
        assert [c["status"] for c in result["toolCalls"]] == ["completed"] * 3
        assert (peer.workspace / "out" / f"{n}.txt").read_text() == f"{n}\n"


async def test_confirm_file_edits_is_refused_up_front_when_no_prompt_can_be_shown(
    start_server: StartServer,
) -> None:
    peer = await start(start_server, ["never"], capabilities=NO_PROMPT_CAPS)
    error = await expect_error(peer.chat(enabledTools=["read_file", "write_file"]))
    assert error.code == -32600 and error.data == {"param": "confirmFileEdits"}
    served = await peer.chat(enabledTools=["read_file", "write_file"], confirmFileEdits=False)
    assert served["text"] == "never"


async def test_an_auto_run_path_is_refused_at_once_when_the_editor_cannot_be_asked(
    start_server: StartServer,
) -> None:
    # confirmFileEdits off lets the request in; the edit of .vscode/ must still be asked about,
    # and an editor that advertises no way to ask is not sent a prompt it cannot answer.
    hook = tool_call("write_file", path=".vscode/tasks.json", content="{}\n")
    peer = await start(start_server, [hook, "Done."], capabilities=NO_PROMPT_CAPS)
    result = await peer.chat(enabledTools=["read_file", "write_file"], confirmFileEdits=False)
    assert [c["status"] for c in result["toolCalls"]] == ["denied"]
    assert "showMessageRequest" not in peer.order and peer.confirms == []
    [end] = peer.of_type("tool_end")
    assert "cannot show an approval prompt" in end["result"]
    assert not (peer.workspace / ".vscode").exists()
