"""``gatehouse chat``: a terminal client that drives a real ``gatehouse serve`` child over stdio.

It is an ordinary JSON-RPC client (:mod:`server.rpc_client`): what it shows is exactly what an
editor would get. Approvals are answered by ``--approve`` or asked on the terminal; Ctrl-C during a
turn sends ``agent/cancel`` (a second Ctrl-C quits at once). Exit codes: 0 when the turn ended
normally (``end_turn``), 1 on an error response, a lost server or a turn stopped by a limit, 2 for
usage errors, 130 after Ctrl-C.
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
import termios
import threading
from pathlib import Path
from typing import Any

from engine import __version__
from server.harness_view import View
from server.protocol import AGENT_CANCEL, AGENT_CHAT, AGENT_STREAM, TOOL_CONFIRM
from server.rpc_client import ConnectionLost, RpcClient, RpcError

logger = logging.getLogger(__name__)

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
PROMPT = "  Allow? [y]es / [s]ession / [n]o: "
NO_TTY = "no terminal to ask on: denied; use --approve allow to allow"
_ANSWERS = {
    "y": "allow",
    "yes": "allow",
    "s": "allow_session",
    "session": "allow_session",
    "n": "deny",
    "no": "deny",
}
_MESSAGE_TYPES = {1: "error", 2: "warning", 3: "info", 4: "log"}


def _diag(text: str) -> None:
    sys.stderr.write(f"gatehouse chat: {text}\n")
    sys.stderr.flush()


class LineReader:
    """Reads lines from a file descriptor in a helper thread, one read at a time, on demand.

    The event loop never blocks on the terminal, so a withdrawn approval prompt can simply stop
    waiting. On a terminal, a line that arrives when nobody is asking any more is dropped: an
    answer typed for a withdrawn prompt must not answer the next one.
    """

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self.is_tty = os.isatty(fd)
        self._buffer = b""
        self._eof = False
        self._reading = False
        self._waiter: asyncio.Future[str | None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def discard_typeahead(self) -> None:
        """Forget anything typed before a question was shown."""
        if self.is_tty:
            self._buffer = b""
            with contextlib.suppress(OSError, termios.error):
                termios.tcflush(self._fd, termios.TCIFLUSH)

    async def readline(self) -> str | None:
        """The next line without its newline; None at end of input."""
        line = self._take(final=self._eof)
        if line is not None or self._eof:
            return line
        self._loop = asyncio.get_running_loop()
        waiter: asyncio.Future[str | None] = self._loop.create_future()
        self._waiter = waiter
        if not self._reading:
            self._reading = True
            threading.Thread(target=self._read, name="stdin-reader", daemon=True).start()
        try:
            return await waiter
        finally:
            if self._waiter is waiter:
                self._waiter = None

    def _take(self, *, final: bool) -> str | None:
        if b"\n" in self._buffer:
            raw, self._buffer = self._buffer.split(b"\n", 1)
        elif final and self._buffer:
            raw, self._buffer = self._buffer, b""
        else:
            return None
        return raw.decode("utf-8", errors="replace").rstrip("\r")

    def _read(self) -> None:  # in the helper thread
        try:
            data = os.read(self._fd, 4096)
        except OSError:
            data = b""
        loop = self._loop
        if loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop is gone: we are exiting
                loop.call_soon_threadsafe(self._received, data)

    def _received(self, data: bytes) -> None:
        self._reading = False
        self._eof = self._eof or not data
        waiter = self._waiter
        if waiter is None or waiter.done():
            if self.is_tty:
                self._buffer = b""
            else:
                self._buffer += data
            return
        self._buffer += data
        line = self._take(final=self._eof)
        if line is not None or self._eof:
            waiter.set_result(line)
        else:
            self._reading = True
            threading.Thread(target=self._read, name="stdin-reader", daemon=True).start()


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
        if isinstance(params, dict):
            self._learn_session(params.get("sessionId"))
            self.view.stream(params)

    def _on_show_message(self, params: Any) -> None:
        if isinstance(params, dict):
            kind = _MESSAGE_TYPES.get(params.get("type", 3), "info")
            _diag(f"[{kind}] {params.get('message', '')}")

    # --- approvals -------------------------------------------------------------------------

    async def _on_tool_confirm(self, params: Any) -> dict[str, Any]:
        params = params if isinstance(params, dict) else {}
        self._learn_session(params.get("sessionId"))
        self.view.confirm(params)
        mode = self.args.approve
        if mode == "allow":
            self.view.note("allowed (--approve allow)", "green")
            return {"decision": "allow"}
        if mode == "deny":
            self.view.note("denied (--approve deny)", "red")
            return {"decision": "deny"}
        if not self.lines.is_tty:
            self.view.note(NO_TTY, "red")
            return {"decision": "deny", "message": "nobody was at a terminal to approve it"}
        self.lines.discard_typeahead()
        try:
            while True:
                self.view.prompt(PROMPT)
                line = await self.lines.readline()
                self.view.answered()
                if line is None:
                    self.view.note("end of input: denied", "red")
                    return {"decision": "deny"}
                decision = _ANSWERS.get(line.strip().lower())
                if decision is not None:
                    return {"decision": decision}
        except asyncio.CancelledError:
            self.view.note("(approval withdrawn)", "yellow")
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
        except RpcError as exc:
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
        argv = [sys.executable, "-m", "server", "serve", "--log-level", self.args.log_level]
        argv += ["--workspace", str(self.workspace)]
        for flag in ("backend", "script", "model", "threads"):
            value = getattr(self.args, flag, None)
            if value is not None:
                argv += [f"--{flag}", str(value)]
        grammar = getattr(self.args, "tool_grammar", None)
        if grammar is not None:
            argv.append("--tool-grammar" if grammar else "--no-tool-grammar")
        return argv

    async def _initialize(self) -> dict[str, Any]:
        options = {k: getattr(self.args, k) for k in ("backend", "script", "model")}
        uri = self.workspace.as_uri()
        result = await self.client.request(
            "initialize",
            {
                "processId": os.getpid(),
                "clientInfo": {"name": "gatehouse-chat", "version": __version__},
                "rootUri": uri,
                "workspaceFolders": [
                    {"uri": uri, "name": self.workspace.name or str(self.workspace)}
                ],
                "capabilities": {
                    "experimental": {"toolConfirm": True},
                    "window": {"showMessage": {}},
                },
                "initializationOptions": {k: v for k, v in options.items() if v is not None},
            },
        )
        self.client.notify("initialized", {})
        caps = result.get("capabilities", {}) if isinstance(result, dict) else {}
        info = (caps.get("experimental") or {}).get("gatehouse") or {}
        self.view.sandbox = info.get("sandbox")
        return dict(info)

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
            result = await self.client.request(AGENT_CHAT, params)
        except ConnectionLost:
            raise
        except RpcError as exc:
            self.view.end_turn({})
            if self.args.json:
                error = {"code": exc.code, "message": exc.message, "data": exc.data}
                self.emit_json({"kind": "error", "method": AGENT_CHAT, "error": error})
            _diag(f"error: {exc.message}")
            return EXIT_ERROR
        finally:
            self.turn_running = False
        if self.args.json:
            self.emit_json({"kind": "result", "method": AGENT_CHAT, "result": result})
        self.view.end_turn(result)
        self.session_id = result.get("sessionId", self.session_id)
        stop = result.get("stopReason")
        if stop == "end_turn":
            return EXIT_OK
        return EXIT_INTERRUPTED if stop == "cancelled" else EXIT_ERROR

    async def repl(self, info: dict[str, Any]) -> int:
        self.view.banner(info, str(self.workspace))
        while True:
            self.view.prompt("> ")
            line = await self.lines.readline()
            self.view.answered()
            if line is None:
                return EXIT_OK
            text = line.strip()
            if text == "/quit":
                return EXIT_OK
            if text == "/new":
                self.session_id = None
                self.view.note("(new session)")
            elif text.startswith("/"):
                self.view.note(f"unknown command {text}: /new starts a new session, /quit exits")
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
        except RpcError as exc:
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
    if args.script is not None:
        if not Path(args.script).is_file():
            _diag(f"no such script file: {args.script}")
            return EXIT_USAGE
        args.script = str(Path(args.script).resolve())
    try:
        return asyncio.run(Chat(args).main())
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
