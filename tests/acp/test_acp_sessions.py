"""ACP mode through the official SDK's client over real stdio: what a Zed or JetBrains user
sees and what runs."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from acp import RequestError, text_block
from acp.schema import AllowedOutcome, RequestPermissionResponse

from tests.acp.conftest import StartAcp, cancelled, never, pick, pick_id, tool_call

TOUCH = tool_call("terminal", command="echo ran > made.txt; echo written")


async def test_allowed_call_runs_and_every_update_arrives_in_order(start_acp: StartAcp) -> None:
    peer = await start_acp(["Let me check. " + TOUCH, "It is written."])
    session = await peer.new_session()
    response = await peer.prompt(session)

    assert response.stop_reason == "end_turn"
    assert (peer.workspace / "made.txt").read_text() == "ran\n"
    client = peer.client
    assert client.text() == "Let me check. It is written."
    # the call is announced (pending) before permission is asked; it runs only after
    assert client.order.index("tool_call") < client.order.index("request_permission")
    start = client.of("tool_call")[0]
    assert (start.kind, start.status) == ("execute", "pending")
    assert "echo ran > made.txt" in start.title
    statuses = [u.status for u in client.of("tool_call_update")]
    assert statuses[0] == "in_progress" and statuses[-1] == "completed"
    last = client.of("tool_call_update")[-1]
    shown = " ".join(c.content.text for c in last.content)
    assert "written" in shown and "isolation:" in shown
    assert last.raw_output["exitCode"] == 0


async def test_permission_request_defaults_to_deny_and_names_isolation_and_network(
    start_acp: StartAcp,
) -> None:
    command = "echo \x1b[2Khidden\u202e"
    peer = await start_acp([tool_call("terminal", command=command), "ok"], pick("reject_once"))
    await peer.prompt(await peer.new_session())

    call, options = peer.client.permissions[0]
    # a command hiding characters is offered no rule: Deny, Allow once, and our deny-for-session
    assert [o.kind for o in options] == ["reject_once", "allow_once", "reject_always"]
    assert options[0].name == "Deny"
    assert "isolation:" in call.title and "network: off" in call.title
    text = call.content[0].content.text
    assert "isolation:" in text and "network: off" in text
    assert "\\x1b[2Khidden<U+202E>" in text and "\x1b" not in text  # display-safe, all of it
    assert "hidden or control characters" in text


@pytest.mark.parametrize(
    ("decide", "ended"),
    [
        (pick("reject_once"), "denied"),
        (cancelled, "cancelled"),
        (pick("reject_always"), "denied"),
    ],
    ids=["deny", "cancelled", "deny-always"],
)
async def test_a_call_that_is_not_allowed_does_not_run(
    start_acp: StartAcp, decide: Any, ended: str
) -> None:
    peer = await start_acp([TOUCH, "Fine."], decide)
    response = await peer.prompt(await peer.new_session())

    assert response.stop_reason == "end_turn"
    assert not (peer.workspace / "made.txt").exists()
    last = peer.client.of("tool_call_update")[-1]
    assert last.status == "failed" and last.raw_output["status"] == ended
    shown = [c.content.text for c in last.content]
    assert "```\necho ran > made.txt; echo written\n```" in shown  # what was not run
    assert all(text.strip("`\n") for text in shown)  # no empty output block
    assert "in_progress" not in [u.status for u in peer.client.of("tool_call_update")]


async def test_an_answer_naming_no_offered_option_fails_closed(start_acp: StartAcp) -> None:
    async def odd(_call: Any, _options: Any) -> Any:
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id="allow_everything")
        )

    peer = await start_acp([TOUCH, "Fine."], odd)
    await peer.prompt(await peer.new_session())
    assert not (peer.workspace / "made.txt").exists()
    assert "unknown option" in peer.client.of("tool_call_update")[-1].raw_output["result"]


async def test_always_answers_hold_for_the_rest_of_the_session(start_acp: StartAcp) -> None:
    def touch(name: str) -> str:
        return tool_call("terminal", command=f"touch {name}")

    turns = [touch("1.txt"), touch("2.txt"), "done", touch("3.txt"), touch("4.txt"), "done"]
    peer = await start_acp(turns, pick_id("allow_session"))
    session = await peer.new_session()
    await peer.prompt(session)
    _call, options = peer.client.permissions[0]
    assert [(o.option_id, o.kind) for o in options] == [
        ("deny", "reject_once"),
        ("allow_once", "allow_once"),
        ("allow_session", "allow_always"),
        ("allow_always", "allow_always"),
        ("deny_session", "reject_always"),
    ]
    assert options[2].name == "Allow `touch *` in this session"
    assert (peer.workspace / "1.txt").exists() and (peer.workspace / "2.txt").exists()
    assert len(peer.client.permissions) == 1  # the session grant covered the second call

    peer.client.decide = pick_id("deny_session")
    other = await peer.new_session()  # another session: asked again
    await peer.prompt(other)
    assert len(peer.client.permissions) == 2  # the second call was denied without asking
    assert not (peer.workspace / "3.txt").exists() and not (peer.workspace / "4.txt").exists()


async def test_no_answer_in_time_means_not_run(start_acp: StartAcp) -> None:
    peer = await start_acp([TOUCH, "No answer."], never, options={"confirmTimeoutSeconds": 0.5})
    response = await peer.prompt(await peer.new_session())

    assert response.stop_reason == "end_turn"
    assert not (peer.workspace / "made.txt").exists()
    last = peer.client.of("tool_call_update")[-1]
    assert last.raw_output["status"] == "timed_out"


async def test_session_cancel_while_asking_answers_cancelled_and_nothing_runs(
    start_acp: StartAcp,
) -> None:
    peer = await start_acp([TOUCH, "never said"], never)
    session = await peer.new_session()
    prompt = asyncio.ensure_future(peer.prompt(session))
    await peer.client.wait_for(lambda: bool(peer.client.permissions))
    await peer.conn.cancel(session_id=session)
    response = await prompt

    assert response.stop_reason == "cancelled"
    assert not (peer.workspace / "made.txt").exists()
    assert peer.client.text() == ""


async def test_session_cancel_while_running_kills_the_command(start_acp: StartAcp) -> None:
    peer = await start_acp([tool_call("terminal", command="sleep 30; touch late.txt"), "no"])
    session = await peer.new_session()
    prompt = asyncio.ensure_future(peer.prompt(session))
    await peer.client.wait_for(
        lambda: "in_progress" in [u.status for u in peer.client.of("tool_call_update")]
    )
    await peer.conn.cancel(session_id=session)
    response = await asyncio.wait_for(prompt, 20)

    assert response.stop_reason == "cancelled"
    assert peer.client.of("tool_call_update")[-1].raw_output["status"] == "cancelled"
    assert not (peer.workspace / "late.txt").exists()


async def test_reasoning_streams_as_thought_chunks(start_acp: StartAcp) -> None:
    peer = await start_acp(["<think>Two files.</think>There are two."])
    await peer.prompt(await peer.new_session())
    assert peer.client.text("agent_thought_chunk") == "Two files."
    assert peer.client.text() == "There are two."


async def test_bad_requests_get_clear_errors(start_acp: StartAcp) -> None:
    peer = await start_acp(["hello"])
    with pytest.raises(RequestError) as unknown:
        await peer.prompt("s_nope")
    assert unknown.value.code == -32602
    session = await peer.new_session()
    with pytest.raises(RequestError) as blank:
        await peer.prompt(session, "   ")
    assert blank.value.code == -32602
    with pytest.raises(RequestError) as relative:
        await peer.conn.new_session(cwd="relative/path", mcp_servers=[])
    assert relative.value.code == -32602
    assert (await peer.prompt(session, "hi")).stop_reason == "end_turn"  # still serving


async def test_a_prompt_can_carry_agent_chat_params_in_its_meta(start_acp: StartAcp) -> None:
    peer = await start_acp([TOUCH])
    session = await peer.new_session()
    response = await peer.conn.prompt(
        session_id=session, prompt=[text_block("go")], gatehouse={"enableTools": False}
    )
    assert response.stop_reason == "end_turn"
    assert peer.client.text() == TOUCH  # tools off: the markup is plain text, nothing runs
    assert not peer.client.permissions and not (peer.workspace / "made.txt").exists()
    with pytest.raises(RequestError) as bad:
        await peer.conn.prompt(session_id=session, prompt=[text_block("go")], gatehouse={"x": 1})
    assert bad.value.code == -32602


async def test_model_text_reaches_the_client_display_safe(start_acp: StartAcp) -> None:
    peer = await start_acp(["Done.\x1b[2K all good\u202e\r\nnext line\r"])
    await peer.prompt(await peer.new_session())
    assert peer.client.text() == "Done.\\x1b[2K all good<U+202E>\nnext line\\x0d"


EDIT = tool_call("edit_file", path="notes.txt", old_text="two", new_text="2")


@pytest.mark.parametrize(
    ("decide", "after"),
    [(pick("allow_once"), "one\n2\n"), (pick("reject_once"), "one\ntwo\n")],
    ids=["allow", "deny"],
)
async def test_an_edit_is_asked_about_as_a_diff_and_only_an_allow_writes_it(
    start_acp: StartAcp, decide: Any, after: str
) -> None:
    peer = await start_acp([tool_call("read_file", path="notes.txt"), EDIT, "Done."], decide)
    (peer.workspace / "notes.txt").write_text("one\ntwo\n")
    await peer.prompt(await peer.new_session())

    assert (peer.workspace / "notes.txt").read_text() == after
    [(call, options)] = peer.client.permissions  # the read ran without asking
    assert options[0].kind == "reject_once"
    assert call.title.startswith("Change notes.txt")
    text, diff = call.content
    assert "-two\n+2" in text.content.text  # the whole unified diff, display-safe
    assert diff.type == "diff" and diff.path == str(peer.workspace / "notes.txt")
    assert (diff.old_text, diff.new_text) == ("one\ntwo\n", "one\n2\n")


async def test_a_session_saved_by_an_earlier_process_loads_with_its_history(
    start_acp: StartAcp,
) -> None:
    first = await start_acp(["First answer."])
    session = await first.new_session()
    await first.prompt(session, "remember the word teal")
    first.process.terminate()  # the editor closed; while it runs, the session is its own
    await first.process.wait()

    second = await start_acp([])
    await second.conn.load_session(cwd=str(second.workspace), mcp_servers=[], session_id=session)
    replayed = second.client.text("user_message_chunk") + second.client.text()
    assert "remember the word teal" in replayed and "First answer." in replayed

    with pytest.raises(RequestError):
        await second.conn.load_session(
            cwd=str(second.workspace), mcp_servers=[], session_id="s_0000000000000000"
        )


async def test_an_edit_hiding_characters_is_shown_only_written_out(start_acp: StartAcp) -> None:
    sneaky = tool_call("edit_file", path="notes.txt", old_text="two", new_text="2\u202e")
    peer = await start_acp([tool_call("read_file", path="notes.txt"), sneaky, "Done."])
    (peer.workspace / "notes.txt").write_text("one\ntwo\n")
    await peer.prompt(await peer.new_session())

    [(call, _options)] = peer.client.permissions
    [text] = call.content  # no diff block an editor would render raw
    assert "<U+202E>" in text.content.text and "\u202e" not in text.content.text
    assert "hidden or control characters" in text.content.text
