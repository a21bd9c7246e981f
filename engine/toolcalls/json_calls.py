"""Calls written as JSON ``{"name": ..., "arguments": {...}}`` objects: the reader every JSON family
shares (Hermes, Llama's ``<|python_tag|>``, Mistral's ``[TOOL_CALLS]``), and the test for text
that is nothing but calls (a bare turn, a ```` ```json ```` fence)."""

from __future__ import annotations

import json
import re
from typing import Any

from engine.toolcalls.base import (
    Found,
    failed,
    json_error,
    json_type,
    loads,
    raw_decode,
    skip_ws,
)

_CALL_KEYS = frozenset({"name", "arguments", "parameters", "type"})
_NAME_RE = re.compile(r'"name"\s*:\s*"((?:[^"\\]|\\.)*)"')


def read_call(obj: dict[str, Any], raw: str | None = None) -> Found:
    """The call in a decoded ``{"name": ..., "arguments": {...}}`` object (or ``parameters``)."""
    name = obj.get("name")
    if not isinstance(name, str):
        shape = 'expected {"name": "<tool name>", "arguments": {...}}'
        if name is None:
            return failed(f'missing "name" ({shape})', raw=raw)
        return failed(f'"name" must be a string, got {json_type(name)} ({shape})', raw=raw)
    arguments = obj["arguments"] if "arguments" in obj else obj.get("parameters")
    if arguments is None:
        return Found(name, {}, None, raw)
    if isinstance(arguments, str):
        if not arguments.strip():
            return Found(name, {}, None, raw)
        try:
            arguments = loads(arguments)
        except json.JSONDecodeError as exc:
            reason = f'"arguments" is a string that is not JSON: {json_error(exc)}'
            return failed(reason, name, raw)
    if not isinstance(arguments, dict):
        return failed(f'"arguments" must be a JSON object, got {json_type(arguments)}', name, raw)
    return Found(name, arguments, None, raw)


def _best_name(text: str) -> str:
    match = _NAME_RE.search(text)
    if match is None:
        return ""
    try:
        value = json.loads(f'"{match.group(1)}"')
    except json.JSONDecodeError:
        return match.group(1)
    return value if isinstance(value, str) else match.group(1)


def _decode_list(text: str, pos: int) -> tuple[list[tuple[str, Any]], int]:
    """The items of the JSON array opening at ``text[pos]`` as ``(raw, value)``, and its end."""
    items: list[tuple[str, Any]] = []
    pos = skip_ws(text, pos + 1)
    if pos < len(text) and text[pos] == "]":
        return items, pos + 1
    while True:
        value, end = raw_decode(text, pos)
        items.append((text[pos:end], value))
        pos = skip_ws(text, end)
        if pos < len(text) and text[pos] == "]":
            return items, pos + 1
        if pos >= len(text) or text[pos] != ",":
            raise json.JSONDecodeError("Expecting ',' delimiter", text, pos)
        pos = skip_ws(text, pos + 1)


def _decode_calls(text: str, pos: int) -> tuple[list[tuple[str, Any]], int]:
    """One JSON object, or the items of one JSON array, starting at ``text[pos]``."""
    if text[pos] == "[":
        return _decode_list(text, pos)
    value, end = raw_decode(text, pos)
    return [(text[pos:end], value)], end


def _shaped_like_call(obj: object) -> bool:
    return (
        isinstance(obj, dict)
        and isinstance(obj.get("name"), str)
        and ("arguments" in obj or "parameters" in obj)
        and obj.keys() <= _CALL_KEYS
        and obj.get("type", "function") == "function"
    )


def split_json_calls(text: str) -> list[Found] | None:
    """The calls in ``text`` if it is nothing but call-shaped JSON, else ``None``.

    Call-shaped: an object with a string "name", an "arguments" or "parameters" key and no
    other keys but ``"type": "function"`` (Llama 3.x). ``text`` is one such object, or an array
    of them, or several of either separated by ``;`` (Llama). Used where JSON may just as well be
    an answer (a whole bare turn, a ```` ```json ```` fence).
    """
    text = text.strip()
    items: list[tuple[str, Any]] = []
    pos = 0
    while pos < len(text):
        if text[pos] not in "{[":
            return None
        try:
            decoded, end = _decode_calls(text, pos)
        except json.JSONDecodeError:
            return None
        items += decoded
        pos = skip_ws(text, end)
        if pos < len(text):
            if text[pos] != ";":
                return None
            pos = skip_ws(text, pos + 1)
    if not items or not all(_shaped_like_call(obj) for _, obj in items):
        return None
    return [read_call(obj, raw) for raw, obj in items]


def parse_json_object(inner: str, where: str) -> Found:
    """The first JSON object in ``inner`` as a call (text around it is ignored)."""
    start = inner.find("{")
    if start == -1:
        return failed(f"no JSON object found in {where}")
    try:
        obj, _ = raw_decode(inner, start)
    except json.JSONDecodeError as exc:
        return failed(json_error(exc), _best_name(inner))
    return read_call(obj)


def parse_json_calls(inner: str, where: str) -> list[Found]:
    """JSON calls: objects separated by ``;`` (Llama ``<|python_tag|>``) or a JSON array.

    Text after the last call is ignored, as in ``<tool_call>`` blocks.
    """
    pos = skip_ws(inner, 0)
    if pos == len(inner) or inner[pos] not in "{[":
        shape = '{"name": "<tool name>", "parameters": {...}}'
        return [failed(f"expected a JSON object like {shape} after {where}")]
    found: list[Found] = []
    while True:
        try:
            items, end = _decode_calls(inner, pos)
        except json.JSONDecodeError as exc:
            found.append(failed(json_error(exc), _best_name(inner[pos:]), inner[pos:].strip()))
            return found
        for raw, obj in items:
            if isinstance(obj, dict):
                found.append(read_call(obj, raw))
            else:
                found.append(failed(f"a call must be a JSON object, got {json_type(obj)}", raw=raw))
        pos = skip_ws(inner, end)
        if pos == len(inner) or inner[pos] != ";":
            return found or [failed(f"no call found in the JSON array after {where}")]
        pos = skip_ws(inner, pos + 1)
        if pos == len(inner):
            return found
