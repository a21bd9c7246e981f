"""The JSON-RPC 2.0 envelope of one decoded message, checked before pygls sees it.

pygls dispatches whatever it is given: a ``"jsonrpc": "1.0"`` message is dropped without a word, a
notification method sent with an ``id`` is never answered, an ``id`` that is an array makes its
response unsendable (after the handler already ran), a ``method`` that is a number ends in a
traceback. Every such message is judged here, once, before anything runs:

- a *request* (``method`` and ``id``) gets exactly one response; a bad one gets -32600 and its
  handler never runs (the ``id`` is echoed when it is a string or an integer, else ``null``);
- a *notification* (``method``, no ``id``) is never answered; one that is not valid JSON-RPC 2.0
  gets -32600 with ``id: null`` (the sender cannot be named otherwise); a request method sent
  without an ``id`` is dropped: its result could not be delivered, so nothing runs;
- a *response* (no ``method``) is never answered; one without exactly one of ``result`` and
  ``error`` fails the server's request it names (an approval: never an allow).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from lsprotocol import types as lsp

from server.protocol.errors import INVALID_REQUEST

MsgId = int | str

NOTIFICATIONS: frozenset[str] = frozenset(
    method
    for method, types in lsp.METHOD_TO_TYPES.items()
    if types[0].__name__.endswith("Notification")
)
"""LSP notification methods: sent with an ``id`` they are a mistake the client must hear of."""

LSP_REQUESTS: frozenset[str] = frozenset(
    method for method, types in lsp.METHOD_TO_TYPES.items() if types[0].__name__.endswith("Request")
)


def valid_id(value: object) -> bool:
    """An id the server can echo: a string or an integer (LSP's ``integer | string``)."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


@dataclass(frozen=True)
class Verdict:
    """What to do with a message that must not reach pygls as it is."""

    action: Literal["answer", "drop", "fail_reply"]
    """answer: send an error response; drop: say nothing (logged); fail_reply: a malformed reply
    to one of our requests, which fails that request."""
    msg_id: MsgId | None = None
    code: int = INVALID_REQUEST
    message: str = ""


def _answer(msg_id: object, message: str) -> Verdict:
    echoed = msg_id if valid_id(msg_id) else None
    assert echoed is None or isinstance(echoed, int | str)
    return Verdict("answer", echoed, INVALID_REQUEST, "Invalid Request: " + message)


def judge(message: Any, request_methods: frozenset[str]) -> Verdict | None:
    """None when ``message`` is a well-formed JSON-RPC 2.0 message for pygls to dispatch.

    ``request_methods`` are the custom request methods the server serves (besides LSP's)."""
    if not isinstance(message, dict):
        kind = "a batch" if isinstance(message, list) else "not an object"
        return _answer(None, f"not a JSON-RPC 2.0 message ({kind}; batches are not supported)")
    has_id, msg_id = "id" in message, message.get("id")
    if "method" not in message:
        return _judge_response(message, has_id, msg_id)
    method = message["method"]
    reply_to = msg_id if has_id else None
    if message.get("jsonrpc") != "2.0":
        return _answer(reply_to, 'not a JSON-RPC 2.0 message ("jsonrpc" must be "2.0")')
    if not isinstance(method, str):
        return _answer(reply_to, '"method" must be a string')
    if has_id and not valid_id(msg_id):
        return _answer(None, '"id" must be a string or an integer')
    if has_id and method in NOTIFICATIONS:
        return _answer(msg_id, f"{method} is a notification: send it without an id")
    if not has_id and (method in request_methods or method in LSP_REQUESTS):
        return Verdict("drop", message=f"{method} sent without an id: not run")
    return None


def _judge_response(message: dict[str, Any], has_id: bool, msg_id: object) -> Verdict | None:
    if not has_id or not valid_id(msg_id):
        return Verdict("drop", message="a reply without a usable id")
    assert isinstance(msg_id, int | str)
    if message.get("jsonrpc") != "2.0":
        return Verdict("fail_reply", msg_id, message='a reply whose "jsonrpc" is not "2.0"')
    if ("result" in message) == ("error" in message):
        return Verdict("fail_reply", msg_id, message='a reply needs one of "result" or "error"')
    return None
