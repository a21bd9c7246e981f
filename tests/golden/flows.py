"""The flows of docs/protocol.md, each recorded as a golden transcript.

``python -m tests.golden.flows [NAME ...]`` runs each flow against a real server and (re)writes
``transcripts/NAME.json``; review the diff: a protocol change shows there. The transcripts are
replayed by ``tests/e2e/test_golden_transcripts.py`` and by the VS Code client's contract tests
(``vscode-client/test/contract/golden.test.mjs``).

A flow is a script for the scripted model, the client's capabilities and options, and actions:
send a message, optionally once a message matching ``after`` has arrived; recording ends when a
message matching ``done`` has arrived and the server has then been quiet.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.golden.transcript import (
    QUIET_SECONDS,
    TRANSCRIPTS,
    Bindings,
    ServerPeer,
    merge_key,
    normalise,
    write_files,
)

TOOL_CONFIRM = {"experimental": {"toolConfirm": True}}
SHOW_MESSAGE = {"window": {"showMessage": {}}}
EGLOT = {"textDocument": {"synchronization": {"didSave": True}}, "workspace": {}}
"""What eglot 1.9 declares (in part): editor capabilities, but no ``window`` and no clientInfo."""
SLOW = {"text": "Thinking about it", "chunkDelayMs": 5000}
"""A turn whose first word streams at once and whose next comes 5 s later: room to act between."""


def call(name: str, **arguments: Any) -> str:
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


def chat(msg_id: int, **params: Any) -> dict[str, Any]:
    params = {"prompt": "go", **params}
    return {
        "jsonrpc": "2.0",
        "id": msg_id,
        "method": "agent/chat",
        "params": {"prompt": "go", **params},
    }


def request(msg_id: Any, method: str, params: Any = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def reply(msg_id: str, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "result": result}


ASKED = {"method": "toolConfirm"}
CURL_DENY = {"action": "deny", "tool": "terminal", "pattern": "curl *"}
APPROVAL = "<request:1>"
"""The id of the first request the server sent (its approval request)."""


@dataclass
class Send:
    message: Any
    after: dict[str, Any] | None = None
    raw: bool = False


@dataclass
class WriteFile:
    """Change a workspace file behind the server's back (someone else edits it)."""

    path: str
    content: str
    after: dict[str, Any] | None = None


@dataclass
class Flow:
    name: str
    summary: str
    turns: list[Any]
    actions: list[Send | WriteFile]
    done: dict[str, Any]
    capabilities: dict[str, Any] = field(default_factory=lambda: dict(TOOL_CONFIRM))
    options: dict[str, Any] | None = None
    files: dict[str, str] | None = None
    """Files the workspace holds before the server starts."""


NOTES = {"notes.txt": "one\ntwo\nthree\n"}
READ_NOTES = call("read_file", path="notes.txt")
EDIT_NOTES = call("edit_file", path="notes.txt", old_text="two", new_text="2")


FLOWS: list[Flow] = [
    Flow(
        "allow",
        "A turn with one approved command (docs/protocol.md, 'Message order').",
        ["Let me check. " + call("terminal", command="echo hello"), "It printed hello."],
        [
            Send(chat(1)),
            Send(reply(APPROVAL, {"decision": "allow"}), after={"method": "toolConfirm"}),
        ],
        {"id": 1},
    ),
    Flow(
        "deny_with_message",
        "The user denies with a message; the model is told, nothing runs.",
        [call("terminal", command="rm -rf build"), "Understood."],
        [
            Send(chat(1)),
            Send(
                reply(APPROVAL, {"decision": "deny", "message": "use git clean instead"}),
                after={"method": "toolConfirm"},
            ),
        ],
        {"id": 1},
    ),
    Flow(
        "allow_for_session",
        "allow_session grants the proposed rule (`ls *`) for the session: a later call it "
        "allows runs without asking, and tool_end says which rule decided.",
        [call("terminal", command="ls"), call("terminal", command="ls -a"), "Both ran."],
        [
            Send(chat(1)),
            Send(
                reply(APPROVAL, {"decision": "allow_session", "choice": "allow_session"}),
                after={"method": "toolConfirm"},
            ),
        ],
        {"id": 1},
    ),
    Flow(
        "allow_always",
        "The allow_always choice writes a user rule for this workspace (agent/rules lists it); a "
        "later call it allows runs without asking.",
        [call("terminal", command="ls"), "Listed.", call("terminal", command="ls -a"), "Again."],
        [
            Send(chat(1)),
            Send(
                reply(APPROVAL, {"decision": "allow", "choice": "allow_always"}),
                after={"method": "toolConfirm"},
            ),
            Send(chat(2, sessionId="<session:1>"), after={"id": 1}),
            Send(request(3, "agent/rules", {}), after={"id": 2}),
        ],
        {"id": 3},
    ),
    Flow(
        "rules_add_list_remove",
        "agent/rules/add, agent/rules (sources in order), agent/rules/remove; a built-in rule "
        "cannot be removed.",
        [],
        [
            Send(request(1, "agent/rules/add", CURL_DENY)),
            Send(request(2, "agent/rules", {}), after={"id": 1}),
            Send(request(3, "agent/rules/remove", {"ruleId": "<rule:1>"}), after={"id": 2}),
            # a built-in rule cannot be removed: -32600
            Send(request(4, "agent/rules/remove", {"ruleId": "<rule:2>"}), after={"id": 3}),
        ],
        {"id": 4},
    ),
    Flow(
        "timeout_and_withdrawal",
        "Nobody answers within confirmTimeoutSeconds: the request is withdrawn, nothing runs.",
        [call("terminal", command="echo never"), "No answer came."],
        [Send(chat(1))],
        {"id": 1},
        options={"confirmTimeoutSeconds": 0.5},
    ),
    Flow(
        "cancel_while_pending",
        "agent/cancel while the approval is pending: withdrawn, not run, stopReason cancelled.",
        [call("terminal", command="echo never"), "never said"],
        [
            Send(chat(1)),
            Send(
                request(2, "agent/cancel", {"sessionId": "<session:1>"}),
                after={"method": "toolConfirm"},
            ),
        ],
        {"id": 1},
    ),
    Flow(
        "cancel_while_running",
        "agent/cancel while the command runs: its process tree is killed, stopReason cancelled.",
        [call("terminal", command="sleep 30"), "never said"],
        [
            Send(chat(1)),
            Send(reply(APPROVAL, {"decision": "allow"}), after={"method": "toolConfirm"}),
            Send(
                request(2, "agent/cancel", {"sessionId": "<session:1>"}),
                after={"params": {"type": "status", "text": "Running terminal"}},
            ),
        ],
        {"id": 1},
    ),
    Flow(
        "show_message_request_fallback",
        "A client without toolConfirm is asked with window/showMessageRequest (Deny first).",
        [call("terminal", command="echo fallback"), "Done."],
        [
            Send(chat(1)),
            Send(
                reply(APPROVAL, {"title": "Allow"}),
                after={"method": "window/showMessageRequest"},
            ),
        ],
        {"id": 1},
        capabilities=dict(SHOW_MESSAGE),
    ),
    Flow(
        "editor_without_window_capability",
        "An editor that declares textDocument but not window (eglot 1.9) gets the "
        "window/showMessageRequest fallback; Enter on its pre-filled first action denies.",
        [call("terminal", command="echo eglot"), "Understood."],
        [
            Send(chat(1)),
            Send(
                reply(APPROVAL, {"title": "Deny"}),
                after={"method": "window/showMessageRequest"},
            ),
        ],
        {"id": 1},
        capabilities=dict(EGLOT),
    ),
    Flow(
        "settings_reread",
        "workspace/didChangeConfiguration is honoured: the next request uses the new settings "
        "(here a 0.5 s approval timeout).",
        [call("terminal", command="echo never"), "No answer came."],
        [
            Send(
                {
                    "jsonrpc": "2.0",
                    "method": "workspace/didChangeConfiguration",
                    "params": {"settings": {"gatehouse": {"confirmTimeoutSeconds": 0.5}}},
                }
            ),
            Send(chat(1)),
        ],
        {"id": 1},
    ),
    Flow(
        "upfront_rejection",
        "A client that can show no prompt is refused before any model runs (-32600, data.param).",
        [call("terminal", command="echo never")],
        [Send(chat(1))],
        {"id": 1},
        capabilities={},
    ),
    Flow(
        "edit_allow",
        "An edit_file call: toolConfirm carries the diff, allow writes it, tool_end the edits.",
        [READ_NOTES, "Now the edit. " + EDIT_NOTES, "Changed two to 2."],
        [Send(chat(1)), Send(reply(APPROVAL, {"decision": "allow"}), after=ASKED)],
        {"id": 1},
        files=dict(NOTES),
    ),
    Flow(
        "edit_deny",
        "The user denies an edit: nothing is written, the model is told.",
        [READ_NOTES, EDIT_NOTES, "Leaving it."],
        [
            Send(chat(1)),
            Send(reply(APPROVAL, {"decision": "deny", "message": "keep words"}), after=ASKED),
        ],
        {"id": 1},
        files=dict(NOTES),
    ),
    Flow(
        "edit_user_version",
        "Allow with the user's own version: it is written, and the model is told the difference.",
        [READ_NOTES, EDIT_NOTES, "Noted your version."],
        [
            Send(chat(1)),
            Send(
                reply(
                    APPROVAL,
                    {
                        "decision": "allow",
                        "edits": [{"path": "notes.txt", "content": "one\nTWO (2)\nthree\n"}],
                    },
                ),
                after=ASKED,
            ),
        ],
        {"id": 1},
        files=dict(NOTES),
    ),
    Flow(
        "edit_stale",
        "The file changes while the prompt is open: allow writes nothing; the model must re-read.",
        [READ_NOTES, EDIT_NOTES, "I will read it again."],
        [
            Send(chat(1)),
            WriteFile("notes.txt", "one\ntwo\nthree\nfour\n", after=ASKED),
            Send(reply(APPROVAL, {"decision": "allow"})),
        ],
        {"id": 1},
        files=dict(NOTES),
    ),
    Flow(
        "sessions_changes_rewind",
        "A saved session: what its turn changed, the list, its history, rewinding the turn, "
        "deleting it (docs/protocol.md, 'Sessions, changes and rewind').",
        [call("terminal", command="echo hi > greeting.txt"), "Made it."],
        [
            Send(chat(1)),
            Send(reply(APPROVAL, {"decision": "allow"}), after={"method": "toolConfirm"}),
            Send(
                request(
                    2, "agent/changes", {"sessionId": "<session:1>", "turnId": "<session:1>:1"}
                ),
                after={"id": 1},
            ),
            Send(request(3, "agent/sessions", {}), after={"id": 2}),
            Send(request(4, "agent/session/load", {"sessionId": "<session:1>"}), after={"id": 3}),
            Send(
                request(
                    5,
                    "agent/rewind",
                    {"sessionId": "<session:1>", "turnId": "<session:1>:1", "scope": "both"},
                ),
                after={"id": 4},
            ),
            Send(request(6, "agent/session/delete", {"sessionId": "<session:1>"}), after={"id": 5}),
        ],
        {"id": 6},
    ),
    Flow(
        "error_parse",
        "-32700: the body is not valid JSON (answered with id null).",
        [],
        [Send('{"jsonrpc": "2.0", "id": 1, "method": ', raw=True)],
        {"id": None},
    ),
    Flow(
        "error_not_json_rpc",
        "-32600: valid JSON that is not a JSON-RPC 2.0 message (a batch).",
        [],
        [Send("[]", raw=True)],
        {"id": None},
    ),
    Flow(
        "error_method_not_found",
        "-32601: an unknown method.",
        [],
        [Send(request(1, "agent/bogus", {}))],
        {"id": 1},
    ),
    Flow(
        "error_invalid_params",
        "-32602: every bad field is named, unknown fields included.",
        [],
        [
            Send(
                request(
                    1,
                    "agent/chat",
                    {"prompt": " ", "maxToolCalls": -1, "confirmCodeExecutions": False},
                )
            )
        ],
        {"id": 1},
    ),
    Flow(
        "error_busy_session",
        "-32600 with data.reason busy: a session runs one turn at a time.",
        [SLOW],
        [
            Send(chat(1)),
            Send(chat(2, sessionId="<session:1>"), after={"params": {"type": "content"}}),
            Send(request(3, "agent/cancel", {"sessionId": "<session:1>"}), after={"id": 2}),
        ],
        {"id": 1},
    ),
    Flow(
        "error_request_cancelled",
        "-32800: $/cancelRequest for the agent/chat itself.",
        [SLOW],
        [
            Send(chat(1)),
            Send(
                {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 1}},
                after={"params": {"type": "content"}},
            ),
        ],
        {"id": 1},
    ),
    Flow(
        "model_error",
        "The model breaks mid-stream: stopReason error, a status says why; the session goes on.",
        [{"text": "Let me look", "failWith": "the model server went away"}, "Here it is."],
        [
            Send(chat(1)),
            Send(chat(2, sessionId="<session:1>"), after={"id": 1}),
        ],
        {"id": 2},
    ),
    Flow(
        "error_invalid_id",
        "-32600 with id null: a request whose id is an object never runs.",
        [call("terminal", command="echo never")],
        [
            Send(
                {
                    "jsonrpc": "2.0",
                    "id": {"x": 1},
                    "method": "agent/chat",
                    "params": {"prompt": "go"},
                }
            )
        ],
        {"id": None, "error": {"code": -32600}},
    ),
    Flow(
        "error_notification_with_id",
        "-32600: a notification method sent with an id is answered, not ignored.",
        [],
        [Send(request(7, "initialized", {}))],
        {"id": 7},
    ),
    Flow(
        "error_after_shutdown",
        "-32600: every request after shutdown, except exit.",
        [],
        [Send(request(1, "shutdown")), Send(request(2, "agent/status", {}), after={"id": 1})],
        {"id": 2},
    ),
]


def _contains(message: Any, pattern: Any) -> bool:
    if isinstance(pattern, dict):
        return isinstance(message, dict) and all(
            k in message and _contains(message[k], v) for k, v in pattern.items()
        )
    return bool(message == pattern)


async def record(flow: Flow) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="gatehouse-golden-") as tmp:
        workspace = Path(tmp, "ws")
        workspace.mkdir()
        write_files(workspace, flow.files or {})
        script = Path(tmp, "script.json")
        script.write_text(json.dumps({"turns": flow.turns}), encoding="utf-8")
        peer = ServerPeer(workspace)
        bindings = Bindings(workspace=str(workspace.resolve()))
        steps: list[dict[str, Any]] = []

        pending: list[Any] = []  # a text delta that the following ones may still merge into

        def flush() -> None:
            if pending:
                steps.append({"expect": normalise(pending.pop(), bindings, "root")})

        async def receive_until(pattern: dict[str, Any]) -> None:
            while True:
                message = await peer.next()
                key = merge_key(message)
                if pending and key is not None and merge_key(pending[0]) == key:
                    pending[0]["params"]["text"] += message["params"]["text"]
                else:
                    flush()
                    if key is not None:
                        pending.append(message)
                    else:
                        steps.append({"expect": normalise(message, bindings, "root")})
                if _contains(normalise(message, bindings, "root"), pattern):
                    flush()
                    return

        try:
            await peer.start(script, flow.capabilities, flow.options)
            for action in flow.actions:
                if action.after is not None:
                    await receive_until(action.after)
                if isinstance(action, WriteFile):
                    write_files(workspace, {action.path: action.content})
                    steps.append({"writeFile": {"path": action.path, "content": action.content}})
                elif action.raw:
                    peer.send_raw(action.message)
                    steps.append({"sendRaw": action.message})
                else:
                    peer.send(bindings.substitute(action.message))
                    steps.append({"send": action.message})
            await receive_until(flow.done)
            while True:  # anything after `done` (there should be nothing) is recorded too
                try:
                    message = await peer.next_merged(QUIET_SECONDS)
                except TimeoutError:
                    break
                steps.append({"expect": normalise(message, bindings, "root")})
        finally:
            await peer.close()
    transcript: dict[str, Any] = {
        "flow": flow.name,
        "summary": flow.summary,
        "turns": flow.turns,
        "capabilities": flow.capabilities,
    }
    if flow.options is not None:
        transcript["initializationOptions"] = flow.options
    if flow.files is not None:
        transcript["files"] = flow.files
    transcript["steps"] = steps
    return transcript


def main(names: list[str]) -> int:
    TRANSCRIPTS.mkdir(exist_ok=True)
    for flow in FLOWS:
        if names and flow.name not in names:
            continue
        transcript = asyncio.run(record(flow))
        path = TRANSCRIPTS / f"{flow.name}.json"
        path.write_text(
            json.dumps(transcript, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        sys.stderr.write(
            f"wrote {path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path}\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
