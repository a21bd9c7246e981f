"""Call formats whose arguments are JSON: Hermes/Qwen, bare or fenced JSON, Llama's
``<|python_tag|>``, Mistral's ``[TOOL_CALLS]`` and DeepSeek's tool-call tokens."""

from __future__ import annotations

import json
import re
from typing import Any

from engine.toolcall_formats.base import (
    Found,
    failed,
    json_arguments,
    json_error,
    json_type,
    loads,
    raw_decode,
    skip_ws,
)
from engine.toolcall_formats.scan import mistral_json_start
from engine.toolcall_formats.text_calls import parse_pythonic_list, parse_qwen_xml

_CALL_KEYS = frozenset({"name", "arguments", "parameters", "type"})
_NAME_RE = re.compile(r'"name"\s*:\s*"((?:[^"\\]|\\.)*)"')
_MISTRAL_HEAD_RE = re.compile(r"\s*([^\s\[\]{}]+)(?:\[CALL_ID\][^\[]*)?\[ARGS\]\s*")
_FENCED_ARGS_RE = re.compile(r"```[A-Za-z_]*\s*(.*?)\s*(?:```)?", re.DOTALL)


# DeepSeek's special tokens are spelled with FULLWIDTH VERTICAL LINE (U+FF5C) for the bars and
# LOWER ONE EIGHTH BLOCK (U+2581) for the spaces: <|tool calls begin|> and so on.
def _deepseek_token(words: str) -> str:
    return "<\uff5c" + words.replace(" ", "\u2581") + "\uff5c>"


DS_CALLS_BEGIN = _deepseek_token("tool calls begin")
DS_CALLS_END = _deepseek_token("tool calls end")
DS_CALL_BEGIN = _deepseek_token("tool call begin")
DS_CALL_END = _deepseek_token("tool call end")
DS_SEP = _deepseek_token("tool sep")


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


def bare_calls(text: str) -> list[Found] | None:
    """The calls in a whole turn that is nothing but calls: call-shaped JSON, or a Python list
    of calls (Llama 3.2 "pythonic"); ``None`` for anything else."""
    found = split_json_calls(text)
    if found is None and text.strip().startswith("["):
        return parse_pythonic_list(text)
    return found


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


def parse_hermes(inner: str) -> list[Found]:
    """``<tool_call>`` body: a JSON object (or array of them), or Qwen3-coder XML."""
    if inner.lstrip().startswith("<function="):
        return parse_qwen_xml(inner)
    if inner.lstrip().startswith("["):
        return parse_json_calls(inner, "<tool_call>")
    return [parse_json_object(inner, "<tool_call>...</tool_call>")]


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


def parse_mistral(inner: str) -> list[Found]:
    """After ``[TOOL_CALLS]``: a JSON array of calls (v3) or ``name[ARGS]{...}`` (v11+)."""
    start = mistral_json_start(inner)
    head = inner if start is None else inner[:start]
    if start is not None and not head.strip():
        return parse_json_calls(inner, "[TOOL_CALLS]")
    match = _MISTRAL_HEAD_RE.fullmatch(head)
    if start is None or match is None:
        guess = re.match(r"\s*([^\s\[\]{}]*)", head)
        shape = '[{"name": ..., "arguments": {...}}] or <tool name>[ARGS]{...}'
        return [failed(f"expected {shape} after [TOOL_CALLS]", guess.group(1) if guess else "")]
    return [json_arguments(match.group(1), inner[start:])]


def parse_deepseek(inner: str) -> list[Found]:
    """The text between DeepSeek's "tool call begin" and "tool call end" tokens.

    V3/R1: ``function`` SEP ``NAME`` newline, then the arguments in a ```` ```json ```` fence;
    V3.1: ``NAME`` SEP ``{arguments}`` (SEP is the "tool sep" token).
    """
    left, sep, right = inner.partition(DS_SEP)
    if not sep:
        return [failed(f"expected <tool name>{DS_SEP}{{arguments}}")]
    name, args = left.strip(), right
    if name == "function" and not right.lstrip().startswith("{"):
        line, _, args = right.partition("\n")
        name = line.strip()
        fenced = _FENCED_ARGS_RE.fullmatch(args.strip())
        if fenced is not None:
            args = fenced.group(1)
    if not name:
        return [failed(f"missing the tool name before {DS_SEP}")]
    return [json_arguments(name, args)]
