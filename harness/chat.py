"""``gatehouse chat``: a terminal client that drives a real ``gatehouse serve`` child over stdio.

It is an ordinary JSON-RPC client (:mod:`harness.connection`) that reads every message through
the protocol models: what it shows is exactly what an editor would get. Approvals are answered by
``--approve`` or asked on the terminal (Enter denies); Ctrl-C during a turn sends ``agent/cancel``
(a second Ctrl-C quits at once). Exit codes: 0 when the turn ended normally (``end_turn``), 1 on
an error response, a lost server or a turn stopped by a limit, 2 for usage errors, 130 after
Ctrl-C.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import logging
import os
import signal
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from harness.connection import ConnectionLost, ErrorResponse, RpcClient
from harness.rules import RulesCommand
from harness.sessions import SessionCommands
from harness.terminal import LineReader
from harness.view import View
from server.protocol import (
    AGENT_CANCEL,
    AGENT_CHAT,
    AGENT_STREAM,
    TOOL_CONFIRM,
    ChatResult,
    ChoiceView,
    ClientDecision,
    GatehouseCapabilities,
    ToolConfirmParams,
    ToolConfirmResult,
    stream_event_adapter,
)
from server.protocol.display import visible

logger = logging.getLogger(__name__)

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
PROMPT_END = "(Enter = deny): "
COMMANDS = (
    "/new starts a new session, /sessions lists the saved ones, /resume N continues one, "
    "/changes [TURN] shows what a turn changed, /rewind [TURN] [files|conversation|both] "
    "[force] undoes it, /rules lists the rules, /quit exits"
)
NO_TTY = "no terminal to ask on: denied; use --approve allow to allow"
NO_TTY_MESSAGE = "nobody was at a terminal to approve it"
VERSION = metadata.version("gatehouse")
_KEYS: dict[str, tuple[str, ...]] = {
    "deny": ("n", "no", ""),
    "allow_once": ("y", "yes"),
    "allow_session": ("s", "session"),
    "allow_always": ("a", "always"),
}
"""What a person types for each kind of choice (Enter alone denies)."""
_BASE: dict[str, ClientDecision] = {
    "deny": "deny",
    "allow_once": "allow",
    "allow_session": "allow_session",
    "allow_always": "allow",
}
_BASIC = [
    ChoiceView(id="deny", label="Deny", kind="deny"),
    ChoiceView(id="allow_once", label="Allow once", kind="allow_once"),
]
_MESSAGE_TYPES = {1: "error", 2: "warning", 3: "info", 4: "log"}


def _diag(text: str) -> None:
    sys.stderr.write(f"gatehouse chat: {text}\n")
    sys.stderr.flush()


class Chat:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.client = RpcClient()
        self.view = View(None if args.json else sys.stdout, sys.stderr if args.json else sys.stdout)
        try:
            stdin_fd = sys.stdin.fileno()
        except (AttributeError, OSError, ValueError):  # no stdin at all: reads see end of input
            stdin_fd = -1
        self.lines = LineReader(stdin_fd)
        self.workspace: Path = args.workspace or Path.cwd()
        self.session_id: str | None = None
        self.turn_session: str | None = None
        self.turn_running = False
        self.cancel_wanted = False
        self.cancel_sent = False
        self.interrupted = False
        self.closing = False
        self._tasks: set[asyncio.Task[Any]] = set()
        self._main: asyncio.Task[Any] | None = None
        self._no_tty_denial = False
        self.memory = SessionCommands(self)

    # --- output ----------------------------------------------------------------------------

    def emit_json(self, record: dict[str, Any]) -> None:
        sys.stdout.write(json.dumps({"direction": "server->client", **record}) + "\n")
        sys.stdout.flush()

    def _observe(self, message: dict[str, Any]) -> None:
        if not self.args.json or "method" not in message:
            return  # responses are printed where they are awaited
        record: dict[str, Any] = {
            "kind": "request" if "id" in message else "notification",
            "method": message["method"],
        }
        if "id" in message:
            record["id"] = message["id"]
        self.emit_json({**record, "params": message.get("params")})

    def _on_stream(self, params: Any) -> None:
        try:
            event = stream_event_adapter().validate_python(params)
        except ValidationError as exc:
            logger.warning("ignored an agent/stream notification outside the protocol: %s", exc)
            return
        self._learn_session(event.session_id)
        self.view.stream(event)

    def _on_show_message(self, params: Any) -> None:
        if isinstance(params, dict):
            kind = _MESSAGE_TYPES.get(params.get("type", 3), "info")
            _diag(f"[{kind}] {visible(str(params.get('message', '')))}")

    # --- approvals -------------------------------------------------------------------------

    async def _on_tool_confirm(self, raw: Any) -> dict[str, Any]:
        try:
            params = ToolConfirmParams.model_validate(raw)
        except ValidationError:
            self.view.note("an approval request the client cannot read: denied", "red")
            return ToolConfirmResult(
                decision="deny", message="the client could not read the approval request"
            ).wire()
        self._learn_session(params.session_id)
        self.view.confirm(params)
        choice = await self._decide(params)
        if choice.kind == "deny":
            self.view.denied_here.add(params.tool_call_id)
        message = NO_TTY_MESSAGE if choice.kind == "deny" and self._no_tty_denial else None
        return ToolConfirmResult(
            decision=_BASE[choice.kind],
            message=message,
            approval_id=params.approval_id,
            choice=choice.id,
            content_sha256=params.content_sha256,
        ).wire()

    async def _decide(self, params: ToolConfirmParams) -> ChoiceView:
        self._no_tty_denial = False
        choices = params.choices or _BASIC
        first = {kind: next((c for c in choices if c.kind == kind), None) for kind in _KEYS}
        deny = first["deny"] or _BASIC[0]
        mode = self.args.approve
        if mode == "allow":
            self.view.note("allowed once (--approve allow)", "green")
            return first["allow_once"] or _BASIC[1]
        if mode == "deny":
            self.view.note("denied (--approve deny)", "red")
            return deny
        if not self.lines.is_tty:
            self.view.note(NO_TTY, "red")
            self._no_tty_denial = True
            return deny
        offered = [c for c in first.values() if c is not None]
        menu = "   ".join(f"[{_KEYS[c.kind][0]}] {visible(c.label)}" for c in offered)
        keys = "/".join(_KEYS[c.kind][0] for c in offered)
        self.lines.discard_typeahead()
        try:
            while True:
                self.view.note(menu)
                self.view.prompt(f"  Answer [{keys}] {PROMPT_END}")
                line = await self.lines.readline()
                self.view.answered()
                if line is None:
                    self.view.note("end of input: denied", "red")
                    return deny
                typed = line.strip().lower()
                for choice in offered:
                    if typed in _KEYS[choice.kind]:
                        return choice
        except asyncio.CancelledError:
            self.view.note(f"(approval for {params.name} withdrawn: it did not run)", "yellow")
            raise

    # --- cancel and Ctrl-C -----------------------------------------------------------------

    def _learn_session(self, session_id: Any) -> None:
        if self.turn_running and isinstance(session_id, str) and self.turn_session is None:
            self.turn_session = session_id
            self._maybe_cancel()

    def _maybe_cancel(self) -> None:
        if self.cancel_wanted and not self.cancel_sent and self.turn_session is not None:
            self.cancel_sent = True
            task = asyncio.create_task(self._cancel(self.turn_session))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _cancel(self, session_id: str) -> None:
        try:
            await self.client.request(AGENT_CANCEL, {"sessionId": session_id})
        except ErrorResponse as exc:
            logger.warning("agent/cancel failed: %s", exc.message)

    def _on_sigint(self) -> None:
        if self.closing or self.interrupted or (self.turn_running and self.cancel_wanted):
            self.client.kill()  # second Ctrl-C: quit now
            with contextlib.suppress(OSError, ValueError):
                sys.stdout.flush()
            os._exit(EXIT_INTERRUPTED)
        if self.turn_running:
            self.cancel_wanted = True
            _diag("cancelling the turn (press Ctrl-C again to quit at once)")
            self._maybe_cancel()
            return
        self.interrupted = True
        if self._main is not None:
            self._main.cancel()

    # --- the conversation ------------------------------------------------------------------

    def _server_argv(self) -> list[str]:
        # -P: the current folder (the user's project, writable by approved code) is never put on
        # sys.path, so a `server` package planted there can never be what starts.
        argv = [sys.executable, "-P", "-m", "server", "serve", "--log-level", self.args.log_level]
        argv += ["--workspace", str(self.workspace), *self.args.server_flags]
        return argv

    async def _initialize(self) -> GatehouseCapabilities | None:
        uri = self.workspace.as_uri()
        result = await self.client.request(
            "initialize",
            {
                "processId": os.getpid(),
                "clientInfo": {"name": "gatehouse-chat", "version": VERSION},
                "rootUri": uri,
                "workspaceFolders": [
                    {"uri": uri, "name": self.workspace.name or str(self.workspace)}
                ],
                "capabilities": {
                    "experimental": {"toolConfirm": True},
                    "window": {"showMessage": {}},
                },
            },
        )
        self.client.notify("initialized", {})
        caps = result.get("capabilities", {}) if isinstance(result, dict) else {}
        try:
            described = (caps.get("experimental") or {})["gatehouse"]
            info = GatehouseCapabilities.model_validate(described)
        except (KeyError, TypeError, ValidationError):
            logger.warning("the server did not describe itself (experimental.gatehouse)")
            return None
        self.view.sandbox = info.sandbox
        return info

    async def turn(self, prompt: str) -> int:
        params: dict[str, Any] = {"prompt": prompt}
        tools = getattr(self.args, "tools", None)
        if tools:
            params["enabledTools"] = [t.strip() for t in tools.split(",") if t.strip()]
        if self.session_id is not None:
            params["sessionId"] = self.session_id
        self.turn_running, self.turn_session = True, self.session_id
        self.cancel_wanted = self.cancel_sent = False
        try:
            raw = await self.client.request(AGENT_CHAT, params)
        except ConnectionLost:
            raise
        except ErrorResponse as exc:
            self.view.end_turn(None)
            if self.args.json:
                error = {"code": exc.code, "message": exc.message, "data": exc.data}
                self.emit_json({"kind": "error", "method": AGENT_CHAT, "error": error})
            _diag(f"error: {exc.message}")
            return EXIT_ERROR
        finally:
            self.turn_running = False
        if self.args.json:
            self.emit_json({"kind": "result", "method": AGENT_CHAT, "result": raw})
        try:
            result = ChatResult.model_validate(raw)
        except ValidationError:
            self.view.end_turn(None)
            _diag("error: the server's agent/chat result is not in the protocol")
            return EXIT_ERROR
        self.view.end_turn(result)
        if result.session_id != self.session_id:
            self.memory.turn_ids = []
        self.session_id = result.session_id
        self.memory.learn_turn(result.turn_id)
        if result.stop_reason == "end_turn":
            return EXIT_OK
        return EXIT_INTERRUPTED if result.stop_reason == "cancelled" else EXIT_ERROR

    async def repl(self, info: GatehouseCapabilities | None) -> int:
        self.view.banner(info.version if info else "?", str(self.workspace))
        while True:
            self.view.prompt("> ")
            line = await self.lines.readline()
            self.view.answered()
            if line is None:
                return EXIT_OK
            text = line.strip()
            if text == "/quit":
                return EXIT_OK
            command, *words = text.split() if text.startswith("/") else ("", text)
            if command == "/new":
                self.session_id = None
                self.memory.turn_ids = []
                self.view.note("(new session)")
            elif command == "/rules":
                await RulesCommand(self.client, self.view, self.session_id).run(" ".join(words))
            elif command == "/sessions":
                await self.memory.sessions()
            elif command == "/resume":
                await self.memory.resume(words[0] if words else "")
            elif command == "/changes":
                await self.memory.changes(words)
            elif command == "/rewind":
                await self.memory.rewind(words)
            elif command:
                self.view.note(f"unknown command {command}: {COMMANDS}")
            elif text:
                await self.turn(text)

    async def main(self) -> int:
        self._main = asyncio.current_task()
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGINT, self._on_sigint)
        self.client.on_message(self._observe)
        self.client.on_notification(AGENT_STREAM, self._on_stream)
        self.client.on_notification("window/showMessage", self._on_show_message)
        self.client.on_request(TOOL_CONFIRM, self._on_tool_confirm)
        code = EXIT_ERROR
        try:
            # Its own session: a terminal's Ctrl-C reaches only us, and we decide (agent/cancel).
            await self.client.start(self._server_argv(), new_session=True)
            info = await self._initialize()
            if not await self.memory.resume_from_args():
                return EXIT_ERROR
            if self.args.prompt is not None:
                code = await self.turn(self.args.prompt)
            else:
                code = await self.repl(info)
        except ConnectionLost:
            try:
                status = await asyncio.wait_for(self.client.wait(), 5)
                _diag(f"the server exited unexpectedly (exit code {status})")
            except TimeoutError:
                _diag("the server closed the connection")
        except ErrorResponse as exc:
            _diag(f"error: {exc.message}")
        except asyncio.CancelledError:
            if not self.interrupted:
                raise
            task = asyncio.current_task()
            assert task is not None
            task.uncancel()
            code = EXIT_INTERRUPTED
        finally:
            self.closing = True
            await self.client.close()
            loop.remove_signal_handler(signal.SIGINT)
        return code


def run_chat(args: argparse.Namespace) -> int:
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="replace")  # never die on an unencodable character
    if args.prompt is not None and not args.prompt.strip():
        _diag("the prompt is empty (leave it out for an interactive session)")
        return EXIT_USAGE
    if args.script is not None and not Path(args.script).is_file():
        _diag(f"no such script file: {args.script}")
        return EXIT_USAGE
    try:
        return asyncio.run(Chat(args).main())
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
