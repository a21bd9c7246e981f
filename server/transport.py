"""pygls, adapted to a protocol that must never lose a message.

pygls 2 is the JSON-RPC/LSP transport. This module fixes the places where its defaults do not fit
a server that guards code execution (see ``docs/protocol.md`` and the pygls notes):

- frames are read by :mod:`server.framing` (a size cap, no trust in ``Content-Length``); each body
  is decoded here (:meth:`GatehouseProtocol.receive`) and its envelope judged by
  :mod:`server.envelope` before pygls dispatches it, so every request gets exactly one response
  and a request that cannot be answered never runs;
- custom params and results stay plain dicts (the default converter turns them into namedtuples);
- malformed JSON gets -32700, a message that is not JSON-RPC gets -32600, a known LSP method with
  malformed params gets -32602 -- each as a response, never a popup, never silence;
- errors from handlers are mapped in one place (:mod:`server.errors`), without tracebacks;
- a late reply to a server-to-client request that is no longer pending is ignored;
- requests after ``shutdown`` get -32600 instead of silence.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
from collections.abc import Callable, Generator
from concurrent.futures import Future
from typing import Any

import cattrs
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pygls.protocol import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    LanguageServerProtocol,
    default_converter,
    lsp_method,
)
from pygls.protocol.json_rpc import MsgId

from server.envelope import Verdict, judge
from server.errors import to_response_error
from server.framing import MAX_FRAME_BYTES, Oversized
from server.protocol.errors import INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR

MAX_DEPTH = 128
"""Messages nested deeper than this are refused (-32600) before anything reads them."""

logger = logging.getLogger(__name__)


def _keep_dict(obj: dict[str, Any], cls: type[Any]) -> Any:
    # A request or notification without "params" (allowed by JSON-RPC) gets params=None.
    field = "result" if cls is JsonRPCResponseMessage else "params"
    return cls(**{field: None, **obj})


def make_converter() -> cattrs.Converter:
    """lsprotocol's converter, but custom params/results stay plain JSON values."""
    converter: cattrs.Converter = default_converter()  # type: ignore[no-untyped-call]
    for cls in (JsonRPCRequestMessage, JsonRPCResponseMessage, JsonRPCNotification):
        converter.register_structure_hook(cls, _keep_dict)
    return converter


class _Unreadable:
    """A message that could not be structured; answered with an error, never dispatched."""

    def __init__(self, msg_id: MsgId | None, code: int, message: str, *, is_response: bool) -> None:
        self.msg_id, self.code, self.message, self.is_response = msg_id, code, message, is_response


class Undecodable(ValueError):
    """A frame body that is not one JSON value this server can read."""


def _no_constant(name: str) -> Any:
    raise Undecodable(f"{name} is not JSON")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise Undecodable(f"the number {text[:20]}... is out of range")
    return value


def decode(body: bytes) -> Any:
    """A frame body as JSON; :class:`Undecodable` says why not (NaN, Infinity and numbers out of
    range are refused, so nothing the server echoes can be invalid JSON)."""
    try:
        return json.loads(body.decode("utf-8"), parse_constant=_no_constant, parse_float=_finite)
    except UnicodeDecodeError as exc:
        raise Undecodable(f"the body is not UTF-8 ({exc.reason} at byte {exc.start})") from None
    except RecursionError:
        raise Undecodable("nested too deeply to read") from None
    except json.JSONDecodeError as exc:
        raise Undecodable(f"{exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except ValueError as exc:  # e.g. an integer of more than 4300 digits
        raise Undecodable(str(exc)) from None


def too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether ``value`` nests arrays/objects more than ``limit`` levels deep (no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


class ClientCancelled(Exception):
    """The client sent ``$/cancelRequest`` for a request of ours that it had not answered."""


def _error_response(msg_id: MsgId | None, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}}


class GatehouseProtocol(LanguageServerProtocol):
    """The LSP protocol with Gatehouse's error handling and request bookkeeping."""

    on_initialize: Callable[[lsp.InitializeParams], dict[str, Any]] | None = None
    """Set by the server factory: configures the service, returns ``capabilities.experimental``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._outgoing: dict[MsgId, Future[Any]] = {}
        """Our requests to the client, apart from pygls' table of the client's requests: the
        client chooses its ids freely, so the two must never share one table."""
        self._outgoing_types: dict[MsgId, Any] = {}
        """The result types of our requests, apart from pygls' ``_result_types`` (which pygls
        also reads when it answers a client request with the same id)."""

    @lsp_method(lsp.INITIALIZE)
    def lsp_initialize(
        self, params: lsp.InitializeParams
    ) -> Generator[Any, Any, lsp.InitializeResult]:
        # pygls ignores the value a user ``initialize`` handler returns, so custom capabilities
        # are added here, around the built-in handler.
        result: lsp.InitializeResult = yield from super().lsp_initialize(params)
        if self.on_initialize is not None:
            result.capabilities.experimental = self.on_initialize(params)
        return result

    request_methods: frozenset[str] = frozenset()
    """The custom request methods served (set by the server factory): sent without an id they
    are dropped, never run."""

    # --- reading ----------------------------------------------------------------------------

    @staticmethod
    def prepare(body: bytes) -> Any:
        """Decode a frame body (on the reader thread: a big body does not hold up the event
        loop); an :class:`Undecodable` is returned, not raised."""
        try:
            return decode(body)
        except Undecodable as exc:
            return exc

    def receive(self, message: Any) -> None:
        """One prepared frame from :mod:`server.framing`: judged, dispatched. Anything that goes
        wrong is answered (requests) or logged (the rest); the server keeps serving."""
        if isinstance(message, Undecodable):
            self._send_raw(_error_response(None, PARSE_ERROR, f"Parse error: {message}"))
            return
        verdict = judge(message, self.request_methods)
        if verdict is None and too_deep(message):
            deep = f"Invalid Request: nested more than {MAX_DEPTH} levels deep"
            if "method" not in message:  # a reply: it fails the request it answers
                verdict = Verdict("fail_reply", message["id"], message=deep)
            elif "id" in message:
                verdict = Verdict("answer", message["id"], INVALID_REQUEST, deep)
            else:
                verdict = Verdict("drop", message=deep)
        if verdict is None and self._shutdown and "method" in message and "id" in message:
            verdict = Verdict("answer", message["id"], message="The server is shutting down")
        if verdict is not None:
            self._apply(verdict)
            return
        try:
            self.handle_message(self.structure_message(message))
        except Exception:
            logger.exception("could not handle a message")

    def _apply(self, verdict: Verdict) -> None:
        if verdict.action == "answer":
            self._send_raw(_error_response(verdict.msg_id, verdict.code, verdict.message))
        elif verdict.action == "fail_reply":
            self._handle_unreadable(
                _Unreadable(verdict.msg_id, verdict.code, verdict.message, is_response=True)
            )
        else:
            logger.warning("dropped a message: %s", verdict.message)

    def report_oversized(self, frame: Oversized) -> None:
        """A frame over the size cap: answered, its body never read."""
        claimed = "too many" if frame.length is None else f"{frame.length}"
        self._send_raw(
            _error_response(
                None,
                INVALID_REQUEST,
                f"Invalid Request: the frame is {claimed} bytes; the limit is "
                f"{MAX_FRAME_BYTES} bytes",
            )
        )

    def structure_message(self, data: dict[str, Any]) -> Any:
        # Called by receive() for the top-level message only, after judge() accepted it.
        if "jsonrpc" not in data:
            return data
        try:
            if "method" not in data and "error" not in data:  # a reply to one of our requests
                result_type = self._outgoing_types.pop(data["id"], None)
                return self._converter.structure(data, result_type or JsonRPCResponseMessage)
            return super().structure_message(data)
        except Exception as exc:
            is_response = "method" not in data
            method = data.get("method", "")
            logger.warning("unreadable message (%s): %s", method or "response", exc)
            return _Unreadable(
                data.get("id"),
                INVALID_PARAMS if method else INVALID_REQUEST,
                f"Invalid params for {method}" if method else "Malformed response",
                is_response=is_response,
            )

    def handle_message(self, message: Any) -> None:
        if isinstance(message, _Unreadable):
            self._handle_unreadable(message)
            return
        if not hasattr(message, "jsonrpc"):
            # Valid JSON, but not a JSON-RPC 2.0 message (a batch, a bare value, no "jsonrpc").
            msg_id = message.get("id") if isinstance(message, dict) else None
            self._send_raw(
                _error_response(
                    msg_id, INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 message"
                )
            )
            return
        if (
            self._shutdown
            and getattr(message, "method", lsp.EXIT) != lsp.EXIT
            and hasattr(message, "id")
        ):
            self._send_raw(
                _error_response(message.id, INVALID_REQUEST, "The server is shutting down")
            )
            return
        super().handle_message(message)

    def _handle_unreadable(self, message: _Unreadable) -> None:
        if message.is_response:
            # A malformed reply to one of our requests fails that request (closed, never allowed).
            if message.msg_id is not None:
                self._outgoing_types.pop(message.msg_id, None)
            future = (
                self._outgoing.pop(message.msg_id, None) if message.msg_id is not None else None
            )
            if future is not None and not future.done():
                future.set_exception(JsonRpcException(message.message))
            return
        if message.msg_id is not None:
            self._send_raw(_error_response(message.msg_id, message.code, message.message))

    def _send_raw(self, payload: dict[str, Any]) -> None:
        self._send_data(payload)

    def _send_handler_result(self, future: Future[Any], *, msg_id: MsgId) -> None:
        self._request_futures.pop(msg_id, None)
        if future.cancelled():
            self._send_response(msg_id, error=to_response_error(asyncio.CancelledError()))
            return
        exc = future.exception()
        if exc is None:
            self._send_response(msg_id, result=future.result())
            return
        self._send_response(msg_id, error=to_response_error(exc))

    def send_request(
        self,
        method: str,
        params: Any | None = None,
        callback: Callable[[Any], None] | None = None,
        msg_id: MsgId | None = None,
    ) -> Future[Any]:
        future: Future[Any] = super().send_request(method, params, callback, msg_id)
        for key, value in list(self._request_futures.items()):
            if value is future:  # pygls filed it with the client's requests: move it to ours
                del self._request_futures[key]
                self._outgoing[key] = future
                self._outgoing_types[key] = self._result_types.pop(key, None)
        return future

    def _handle_cancel_notification(self, msg_id: MsgId) -> None:
        if msg_id in self._request_futures:
            super()._handle_cancel_notification(msg_id)  # the client cancels its own request
            return
        future = self._outgoing.pop(msg_id, None)
        if future is not None and not future.done():
            # The client gave up on one of our requests (e.g. a dismissed approval prompt).
            logger.info("the client cancelled our request %s", msg_id)
            self._outgoing_types.pop(msg_id, None)
            future.set_exception(ClientCancelled(f"the client cancelled request {msg_id}"))
            return
        logger.info("$/cancelRequest for an unknown request %s", msg_id)

    def _handle_response(
        self, msg_id: MsgId, result: Any | None = None, error: lsp.ResponseError | None = None
    ) -> None:
        future = self._outgoing.pop(msg_id, None)
        if future is None or future.done():
            # First answer wins; a reply to a withdrawn request is dropped without a popup.
            logger.info("ignored a reply to request %s: no longer pending", msg_id)
            return
        if error is not None:
            future.set_exception(JsonRpcException.from_error(error))
        else:
            future.set_result(result)

    # --- used by the agent service -----------------------------------------------------------

    def withdraw_request(self, msg_id: str) -> None:
        """Tell the client a request of ours is no longer wanted, and forget it."""
        future = self._outgoing.pop(msg_id, None)
        if future is not None and not future.done():
            future.cancel()
        self._outgoing_types.pop(msg_id, None)
        self.notify(lsp.CANCEL_REQUEST, lsp.CancelParams(id=msg_id))
