"""The JSON-RPC 2.0 connection to a server child speaking LSP framing over stdio.

Used by ``gatehouse chat``, benchmarks and tests. A ``$/cancelRequest`` from the server for a
request we are still handling cancels that handler's task, and no answer is sent.

Why not pygls' ``JsonRPCClient``: it decodes every message through lsprotocol's converter (custom
params become namedtuples unless hooked, and importing lsprotocol costs ~0.2-0.4 s of every
``gatehouse chat`` start); it was measured at 5-10k notifications/s where this client reads
~100k/s, which the streaming benchmarks need; and its protocol keeps the client's and the server's
request ids in one table. This module is a plain reader/writer of dicts; the typed view of each
message is :mod:`server.protocol`'s.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

METHOD_NOT_FOUND = -32601
INTERNAL_ERROR = -32603
CONNECTION_LOST = -32099  # never on the wire: pending requests when the server goes away

NotificationCallback = Callable[[Any], None]  # called with the params (None when absent)
RequestHandler = Callable[[Any], Awaitable[Any]]  # awaited with the params; returns the result
MessageObserver = Callable[[dict[str, Any]], None]  # every incoming message, before dispatch


class ErrorResponse(Exception):
    """An error response (or, as :class:`ConnectionLost`, no response at all)."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{message} ({code})")
        self.code = code
        self.message = message
        self.data = data


class ConnectionLost(ErrorResponse):
    """The server closed its stdout (exited or crashed) before answering."""

    def __init__(self, message: str = "the server closed the connection") -> None:
        super().__init__(CONNECTION_LOST, message)


def encode_message(message: Mapping[str, Any]) -> bytes:
    """One framed message: the header counts bytes of the UTF-8 body, not characters."""
    body = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


async def read_message(reader: asyncio.StreamReader) -> Any:
    """The next decoded body; ``asyncio.IncompleteReadError`` at end of stream. A header block
    without a usable Content-Length, or a body that is not UTF-8 JSON, is logged and skipped."""
    while True:
        header = await reader.readuntil(b"\r\n\r\n")
        length: int | None = None
        for line in header.decode("ascii", errors="replace").splitlines():
            name, _, value = line.partition(":")
            if name.strip().lower() == "content-length":
                with contextlib.suppress(ValueError):
                    length = int(value.strip())
        if length is None or length < 0:
            logger.warning("skipped a header block without a valid Content-Length: %r", header)
            continue
        body = await reader.readexactly(length)
        try:
            return json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            logger.warning("skipped an unreadable message body: %s", exc)


class RpcClient:
    """One server child and the JSON-RPC conversation with it."""

    def __init__(self) -> None:
        self._proc: asyncio.subprocess.Process | None = None
        self._reader_task: asyncio.Task[None] | None = None
        self._ids = itertools.count(1)
        self._pending: dict[int | str, asyncio.Future[Any]] = {}
        self._notification_callbacks: dict[str, list[NotificationCallback]] = {}
        self._request_handlers: dict[str, RequestHandler] = {}
        self._handling: dict[int | str, asyncio.Task[None]] = {}
        self._observers: list[MessageObserver] = []
        self._lost = False

    # --- lifecycle -------------------------------------------------------------------------

    async def start(
        self,
        argv: Sequence[str],
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
        *,
        stderr: int | None = None,
        new_session: bool = False,
    ) -> None:
        """Spawn the server. ``stderr`` None inherits ours; ``new_session`` puts the child in its
        own session, so a terminal's Ctrl-C reaches only this process (which may then cancel)."""
        if self._proc is not None:
            raise RuntimeError("already started")
        self._proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=stderr,
            env=dict(env) if env is not None else None,
            cwd=cwd,
            start_new_session=new_session,
        )
        logger.debug("started server pid %d: %s", self._proc.pid, " ".join(argv))
        self._reader_task = asyncio.create_task(self._read_loop(), name="rpc-client-reader")

    @property
    def pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    @property
    def returncode(self) -> int | None:
        return None if self._proc is None else self._proc.returncode

    async def wait(self) -> int:
        """Wait for the server process to exit; its return code."""
        assert self._proc is not None, "not started"
        return await self._proc.wait()

    def kill(self) -> None:
        """Kill the server at once (for a hard exit); :meth:`close` still cleans up."""
        if self._proc is not None and self._proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self._proc.kill()

    async def close(self, grace_seconds: float = 5.0) -> int | None:
        """``shutdown`` + ``exit`` if the server is still there, then wait (kill if it hangs);
        the server's exit code (None if it was never started)."""
        proc = self._proc
        if proc is None:
            return None
        if not self._lost and proc.returncode is None:
            try:
                await asyncio.wait_for(self.request("shutdown"), grace_seconds)
                self.notify("exit")
            except (ErrorResponse, TimeoutError) as exc:
                logger.debug("shutdown was not answered cleanly: %s", exc)
        if proc.stdin is not None and not proc.stdin.is_closing():
            proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), grace_seconds)
        except TimeoutError:
            logger.warning("server pid %d did not exit in %gs: killing it", proc.pid, grace_seconds)
            self.kill()
            await proc.wait()
        for task in list(self._handling.values()):
            task.cancel()
        if self._reader_task is not None:
            await asyncio.gather(self._reader_task, return_exceptions=True)
        return proc.returncode

    # --- registration ----------------------------------------------------------------------

    def on_notification(self, method: str, callback: NotificationCallback) -> None:
        self._notification_callbacks.setdefault(method, []).append(callback)

    def on_request(self, method: str, handler: RequestHandler) -> None:
        self._request_handlers[method] = handler

    def on_message(self, observer: MessageObserver) -> None:
        self._observers.append(observer)

    # --- sending ---------------------------------------------------------------------------

    def send_raw(self, data: bytes) -> None:
        """Write bytes as they are (framing included or not: for tests of malformed input)."""
        proc = self._proc
        if proc is None or proc.stdin is None:
            raise RuntimeError("not started")
        if self._lost or proc.stdin.is_closing():
            raise ConnectionLost()
        proc.stdin.write(data)

    def send(self, message: Mapping[str, Any]) -> None:
        self.send_raw(encode_message(message))

    def notify(self, method: str, params: Any = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        try:
            self.send(message)
        except ConnectionLost:
            logger.info("dropped notification %s: the server is gone", method)

    async def request(self, method: str, params: Any = None) -> Any:
        """Send a request and wait for its result; raises :class:`ErrorResponse` on an error."""
        msg_id = next(self._ids)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[msg_id] = future
        try:
            self.send(message)
            return await future
        finally:
            self._pending.pop(msg_id, None)

    # --- receiving -------------------------------------------------------------------------

    async def _read_loop(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        stdout = self._proc.stdout
        try:
            while True:
                try:
                    message = await read_message(stdout)
                except (asyncio.IncompleteReadError, ConnectionError):
                    break
                except asyncio.LimitOverrunError:
                    logger.error("a header block was too long: giving up on the stream")
                    break
                self._dispatch(message)
        finally:
            self._lost = True
            for future in self._pending.values():
                if not future.done():
                    future.set_exception(ConnectionLost())
            for task in list(self._handling.values()):
                task.cancel()

    def _dispatch(self, message: Any) -> None:
        if not isinstance(message, dict):
            logger.warning("ignored a message that is not an object: %r", message)
            return
        for observer in self._observers:
            try:
                observer(message)
            except Exception:
                logger.exception("message observer failed")
        method = message.get("method")
        if isinstance(method, str):
            if "id" in message:
                self._start_handler(message["id"], method, message.get("params"))
            else:
                self._handle_notification(method, message.get("params"))
            return
        msg_id = message.get("id")
        future = self._pending.get(msg_id) if isinstance(msg_id, int | str) else None
        if future is None or future.done():
            logger.info("ignored a response to unknown request %r", msg_id)
            return
        error = message.get("error")
        if error is not None:
            if not isinstance(error, dict):
                error = {"code": INTERNAL_ERROR, "message": str(error)}
            future.set_exception(
                ErrorResponse(
                    int(error.get("code", INTERNAL_ERROR)),
                    str(error.get("message", "")),
                    error.get("data"),
                )
            )
        else:
            future.set_result(message.get("result"))

    def _handle_notification(self, method: str, params: Any) -> None:
        if method == "$/cancelRequest" and isinstance(params, dict):
            withdrawn = params.get("id")
            task = self._handling.pop(withdrawn, None) if isinstance(withdrawn, int | str) else None
            if task is not None:
                logger.debug("the server withdrew request %r", withdrawn)
                task.cancel()
        for callback in self._notification_callbacks.get(method, []):
            try:
                callback(params)
            except Exception:
                logger.exception("notification callback for %s failed", method)

    def _start_handler(self, msg_id: Any, method: str, params: Any) -> None:
        handler = self._request_handlers.get(method)
        if handler is None:
            self._answer(msg_id, error={"code": METHOD_NOT_FOUND, "message": f"Unhandled {method}"})
            return

        async def run() -> None:
            try:
                result = await handler(params)
            except asyncio.CancelledError:
                return  # withdrawn (or closing): no answer
            except ErrorResponse as exc:
                self._answer(msg_id, error={"code": exc.code, "message": exc.message})
            except Exception as exc:
                logger.exception("handler for %s failed", method)
                self._answer(msg_id, error={"code": INTERNAL_ERROR, "message": str(exc)})
            else:
                self._answer(msg_id, result=result)
            finally:
                self._handling.pop(msg_id, None)

        if isinstance(msg_id, int | str):
            self._handling[msg_id] = asyncio.create_task(run(), name=f"rpc-handler-{method}")
        else:
            logger.warning("ignored request %s with an invalid id %r", method, msg_id)

    def _answer(self, msg_id: Any, *, result: Any = None, error: Any = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id}
        if error is not None:
            message["error"] = error
        else:
            message["result"] = result
        try:
            self.send(message)
        except ConnectionLost:
            logger.info("could not answer request %r: the server is gone", msg_id)
