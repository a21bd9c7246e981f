"""ACP calls beyond the approval flow of test_acp_sessions.py: an error reply fails closed, reading
and searching are shown with their kinds, a prompt's _meta model is used. Through the official
SDK's client over real stdio."""

from __future__ import annotations

from typing import Any

from acp import RequestError, text_block

from tests.acp.conftest import StartAcp, tool_call

TOUCH = tool_call("terminal", command="echo ran > made.txt; echo written")


async def test_an_error_reply_to_the_permission_request_runs_nothing(start_acp: StartAcp) -> None:
    async def broken(_call: Any, _options: Any) -> Any:
        raise RequestError.internal_error({"why": "the client's dialog crashed"})

    peer = await start_acp([TOUCH, "Fine."], broken)
    response = await peer.prompt(await peer.new_session())

    assert response.stop_reason == "end_turn"
    assert not (peer.workspace / "made.txt").exists()
    last = peer.client.of("tool_call_update")[-1]
    assert last.status == "failed" and "with an error" in last.raw_output["result"]


async def test_reading_and_searching_are_shown_as_read_and_search_calls(
    start_acp: StartAcp,
) -> None:
    turns = [
        tool_call("read_file", path="notes.txt") + tool_call("search_files", pattern="TODO"),
        "Read.",
    ]
    peer = await start_acp(turns)
    (peer.workspace / "notes.txt").write_text("TODO: count\n", encoding="utf-8")
    await peer.prompt(await peer.new_session())

    calls = peer.client.of("tool_call")
    assert [c.kind for c in calls] == ["read", "search"]
    assert {c.status for c in calls} == {"in_progress"}
    assert [c.title for c in calls] == ["read_file: notes.txt", "search_files: TODO"]
    assert not peer.client.permissions  # reading is not gated
    assert [u.status for u in peer.client.of("tool_call_update")] == ["completed", "completed"]


async def test_a_prompt_naming_a_model_in_its_meta_gets_that_model(start_acp: StartAcp) -> None:
    # as agent/chat's model param: a model other than the loaded one is made for this prompt
    # (here another scripted model, which starts its script again)
    peer = await start_acp(["first", "second"])
    session = await peer.new_session()
    await peer.prompt(session)
    await peer.conn.prompt(
        session_id=session, prompt=[text_block("go")], gatehouse={"model": "another-script"}
    )
    assert peer.client.text() == "firstfirst"
