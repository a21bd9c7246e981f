"""Streaming tool-call parser: raw model text deltas in, typed parse events out.

A model's output arrives in deltas of any size, which may split a tag anywhere. The parser turns
them, in order, into :class:`TextPiece` (content or reasoning, streamed live), :class:`ArgsPreview`
(the raw inner text of a call while the model writes it) and :class:`ParsedToolCall` events.

Recognised in this version:

* ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` (Hermes/Qwen), any number per turn;
  an unclosed block is parsed when the next ``<tool_call>`` opens or at the end of the turn.
* Bare JSON as the whole turn: one ``{"name": ..., "arguments": {...}}`` object or a list of them.
  A turn whose first non-whitespace content is ``{`` or ``[`` is held back until it is either
  known not to be a single JSON value (then it streams as ordinary text) or the turn ends.
* ``<think>...</think>`` streamed as reasoning.

Tag families are rows of :data:`_BLOCKS`; a new family whose inner text is not Hermes-style JSON
adds a row and an inner parser.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["ArgsPreview", "ParseEvent", "ParsedToolCall", "TextPiece", "ToolCallParser"]


@dataclass(frozen=True)
class TextPiece:
    """A delta of visible content or of reasoning; never cumulative, never empty."""

    kind: Literal["content", "reasoning"]
    text: str


@dataclass(frozen=True)
class ArgsPreview:
    """A delta of a call's raw inner text while the model writes it. A live preview only."""

    index: int
    text: str


@dataclass(frozen=True)
class ParsedToolCall:
    """A complete tool call. ``error`` is set when call markup was found but could not be parsed;
    it is a reason written for the model to read."""

    index: int
    name: str
    arguments: dict[str, Any]
    raw: str
    error: str | None = None


ParseEvent = TextPiece | ArgsPreview | ParsedToolCall


@dataclass(frozen=True)
class _Block:
    """A tagged block: its opening and closing tag, and what its inner text is."""

    open: str
    close: str
    kind: Literal["reasoning", "call"]


_BLOCKS: tuple[_Block, ...] = (
    _Block("<think>", "</think>", "reasoning"),
    _Block("<tool_call>", "</tool_call>", "call"),
)

_ERROR_PREFIX = "Could not parse tool call: "
_CALL_KEYS = frozenset({"name", "arguments", "parameters"})
_NAME_RE = re.compile(r'"name"\s*:\s*"((?:[^"\\]|\\.)*)"')
_JSON_TYPES: dict[type, str] = {
    dict: "object",
    list: "array",
    str: "string",
    int: "number",
    float: "number",
    bool: "boolean",
    type(None): "null",
}

_Mode = Literal["text", "bare"] | _Block


class ToolCallParser:
    """Parses one model turn. Call :meth:`feed` per delta, then :meth:`finish` once."""

    def __init__(self, *, tools_enabled: bool = True) -> None:
        self._blocks = tuple(b for b in _BLOCKS if tools_enabled or b.kind != "call")
        self._opens = {b.open: b for b in self._blocks}
        self._call_opens = tuple(b.open for b in self._blocks if b.kind == "call")
        self._mode: _Mode = "text"
        self._buf = ""  # received but not yet consumed
        self._out: list[ParseEvent] = []
        self._done = False
        # Bare JSON is possible while no non-whitespace content and no call has been seen.
        self._bare_possible = tools_enabled
        self._next_index = 0
        # The call being written (mode is a call block).
        self._call_index = 0
        self._call_inner = ""
        # Incremental JSON shape scan of the held text (mode "bare").
        self._scan_pos = 0
        self._depth = 0
        self._in_str = False
        self._escape = False
        self._closed = False

    # -- public API ---------------------------------------------------------------------------

    def feed(self, delta: str) -> list[ParseEvent]:
        """Take the next raw text delta; return the events it completes (possibly none)."""
        if self._done:
            raise RuntimeError("ToolCallParser.feed() called after finish()")
        self._buf += delta
        self._process()
        return self._take()

    def finish(self) -> list[ParseEvent]:
        """End of the model turn: flush everything held back. The parser is done afterwards."""
        if self._done:
            raise RuntimeError("ToolCallParser.finish() called twice")
        self._done = True
        self._flush()
        return self._take()

    # -- the state machine --------------------------------------------------------------------

    def _process(self) -> None:
        while True:
            mode = self._mode
            if mode == "bare":
                if self._scan_bare():
                    return
                self._mode = "text"  # cannot be a single JSON value: stream it as text
                self._bare_possible = False
            elif mode == "text":
                if self._bare_possible:
                    rest = self._buf.lstrip()
                    if not rest:
                        return  # only whitespace so far: it may surround a bare JSON call
                    if rest[0] in "{[":
                        self._mode = "bare"
                        self._scan_pos = 0
                        continue
                text, tag = self._cut(tuple(self._opens))
                self._push(TextPiece("content", text))
                if text.strip():
                    self._bare_possible = False
                if tag is None:
                    return
                block = self._opens[tag]
                if block.kind == "call":
                    self._start_call()
                self._mode = block
            elif mode.kind == "reasoning":
                text, tag = self._cut((mode.close,))
                self._push(TextPiece("reasoning", text))
                if tag is None:
                    return
                self._mode = "text"
            else:
                text, tag = self._cut((mode.close, *self._call_opens))
                self._preview(text)
                if tag is None:
                    return
                self._end_call(mode, closed=tag == mode.close)
                if tag == mode.close:
                    self._mode = "text"
                else:  # a new call opened before this one was closed
                    self._mode = self._opens[tag]
                    self._start_call()

    def _flush(self) -> None:
        mode = self._mode
        if mode == "bare":
            self._finish_bare()
        elif mode == "text":
            self._push(TextPiece("content", self._buf))
        elif mode.kind == "reasoning":
            self._push(TextPiece("reasoning", self._buf))
        else:
            self._preview(self._buf)
            self._end_call(mode, closed=False)
        self._buf = ""

    def _cut(self, tags: Sequence[str]) -> tuple[str, str | None]:
        """Consume the buffer up to and including the earliest of ``tags``.

        Returns the text before it and the tag. With no tag in the buffer, consumes all but the
        longest suffix that could still be the start of one, and returns ``(text, None)``.
        """
        buf = self._buf
        found: tuple[int, str] | None = None
        for tag in tags:
            i = buf.find(tag)
            if i != -1 and (found is None or i < found[0]):
                found = (i, tag)
        if found is not None:
            i, tag = found
            self._buf = buf[i + len(tag) :]
            return buf[:i], tag
        longest = max(len(t) for t in tags)
        keep = len(buf)
        for start in range(max(0, len(buf) - longest + 1), len(buf)):
            if any(t.startswith(buf[start:]) for t in tags):
                keep = start
                break
        self._buf = buf[keep:]
        return buf[:keep], None

    def _scan_bare(self) -> bool:
        """Advance the JSON shape scan of held text; False once it cannot be one JSON value."""
        buf = self._buf
        for ch in buf[self._scan_pos :]:
            if self._closed:
                if not ch.isspace():
                    return False
            elif self._in_str:
                if self._escape:
                    self._escape = False
                elif ch == "\\":
                    self._escape = True
                elif ch == '"':
                    self._in_str = False
            elif ch == '"':
                self._in_str = True
            elif ch in "{[":
                self._depth += 1
            elif ch in "}]":
                self._depth -= 1
                self._closed = self._depth == 0
            elif ch == "<":  # never valid outside a JSON string; likely a tag
                return False
        self._scan_pos = len(buf)
        return True

    def _finish_bare(self) -> None:
        text = self._buf.strip()
        objects = _split_json_calls(text)
        if objects is not None:
            for raw, obj in objects:
                self._emit_call(raw, obj)
            return
        try:
            json.loads(text)
        except json.JSONDecodeError:
            # Not JSON at all: read it as ordinary text (tags included), then flush.
            self._mode = "text"
            self._bare_possible = False
            self._process()
            self._flush()
        else:
            self._push(TextPiece("content", self._buf))

    # -- calls --------------------------------------------------------------------------------

    def _start_call(self) -> None:
        self._bare_possible = False
        self._call_index = self._next_index
        self._next_index += 1
        self._call_inner = ""

    def _preview(self, text: str) -> None:
        self._call_inner += text
        if text:
            self._push(ArgsPreview(self._call_index, text))

    def _end_call(self, block: _Block, *, closed: bool) -> None:
        inner = self._call_inner
        raw = block.open + inner + (block.close if closed else "")
        start = inner.find("{")
        if start == -1:
            reason = f"no JSON object found in {block.open}...{block.close}"
            self._push(ParsedToolCall(self._call_index, "", {}, raw, _ERROR_PREFIX + reason))
            return
        try:
            obj, _ = json.JSONDecoder().raw_decode(inner, start)
        except json.JSONDecodeError as exc:
            match = _NAME_RE.search(inner)
            name = _unescape(match.group(1)) if match else ""
            reason = f"{exc.msg} at line {exc.lineno} column {exc.colno}"
            self._push(ParsedToolCall(self._call_index, name, {}, raw, _ERROR_PREFIX + reason))
            return
        name, arguments, error = _read_call(obj)
        self._push(ParsedToolCall(self._call_index, name, arguments, raw, error))

    def _emit_call(self, raw: str, obj: dict[str, Any]) -> None:
        name, arguments, error = _read_call(obj)
        self._push(ParsedToolCall(self._next_index, name, arguments, raw, error))
        self._next_index += 1

    # -- output -------------------------------------------------------------------------------

    def _push(self, event: ParseEvent) -> None:
        """Queue an event, dropping empty deltas and merging with an adjacent delta of its kind."""
        last = self._out[-1] if self._out else None
        if isinstance(event, TextPiece):
            if not event.text:
                return
            if isinstance(last, TextPiece) and last.kind == event.kind:
                self._out[-1] = TextPiece(event.kind, last.text + event.text)
                return
        elif (
            isinstance(event, ArgsPreview)
            and isinstance(last, ArgsPreview)
            and last.index == event.index
        ):
            self._out[-1] = ArgsPreview(event.index, last.text + event.text)
            return
        self._out.append(event)

    def _take(self) -> list[ParseEvent]:
        out, self._out = self._out, []
        return out


def _read_call(obj: dict[str, Any]) -> tuple[str, dict[str, Any], str | None]:
    """``(name, arguments, error)`` from a decoded ``{"name": ..., "arguments": ...}`` object."""
    name = obj.get("name")
    if not isinstance(name, str):
        shape = 'expected {"name": "<tool name>", "arguments": {...}}'
        if name is None:
            return "", {}, f'{_ERROR_PREFIX}missing "name" ({shape})'
        return "", {}, f'{_ERROR_PREFIX}"name" must be a string, got {_json_type(name)} ({shape})'
    arguments = obj["arguments"] if "arguments" in obj else obj.get("parameters")
    if arguments is None:
        return name, {}, None
    if isinstance(arguments, str):
        if not arguments.strip():
            return name, {}, None
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError as exc:
            reason = f"{exc.msg} at line {exc.lineno} column {exc.colno}"
            return name, {}, f'{_ERROR_PREFIX}"arguments" is a string that is not JSON: {reason}'
    if not isinstance(arguments, dict):
        kind = _json_type(arguments)
        return name, {}, f'{_ERROR_PREFIX}"arguments" must be a JSON object, got {kind}'
    return name, arguments, None


def _split_json_calls(text: str) -> list[tuple[str, dict[str, Any]]] | None:
    """The calls in a whole-turn bare JSON ``text`` as ``(raw, object)`` pairs, or ``None``.

    ``text`` must be exactly one object shaped like a call (keys among name/arguments/parameters,
    with "name" and an arguments key), or a non-empty list of only such objects.
    """
    decoder = json.JSONDecoder()
    pieces: list[tuple[str, Any]] = []
    try:
        if text.startswith("{"):
            obj, end = decoder.raw_decode(text)
            if end != len(text):
                return None
            pieces.append((text, obj))
        elif text.startswith("["):
            pos = _skip_ws(text, 1)
            while pos < len(text) and text[pos] != "]":
                obj, end = decoder.raw_decode(text, pos)
                pieces.append((text[pos:end], obj))
                pos = _skip_ws(text, end)
                if pos < len(text) and text[pos] == ",":
                    pos = _skip_ws(text, pos + 1)
                elif pos < len(text) and text[pos] != "]":
                    return None
            if pos != len(text) - 1:
                return None
    except json.JSONDecodeError:
        return None
    calls: list[tuple[str, dict[str, Any]]] = []
    for raw, obj in pieces:
        if not (
            isinstance(obj, dict)
            and "name" in obj
            and ("arguments" in obj or "parameters" in obj)
            and obj.keys() <= _CALL_KEYS
        ):
            return None
        calls.append((raw, obj))
    return calls or None


def _skip_ws(text: str, pos: int) -> int:
    while pos < len(text) and text[pos].isspace():
        pos += 1
    return pos


def _json_type(value: object) -> str:
    return _JSON_TYPES.get(type(value), type(value).__name__)


def _unescape(json_string_body: str) -> str:
    try:
        value = json.loads(f'"{json_string_body}"')
    except json.JSONDecodeError:
        return json_string_body
    return value if isinstance(value, str) else json_string_body
