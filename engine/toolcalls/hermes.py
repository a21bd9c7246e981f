"""Hermes/Qwen: ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` (the format Gatehouse
itself writes, see :mod:`engine.toolcalls.markup`), and Qwen3-coder XML
``<function=NAME><parameter=KEY>value</parameter></function>``, inside ``<tool_call>`` or on its
own (Llama 3.1 writes ``<function=NAME>{...}</function>``)."""

from __future__ import annotations

import re
from typing import Any

from engine.toolcalls.base import Found, failed, json_arguments
from engine.toolcalls.json_calls import parse_json_calls, parse_json_object
from engine.toolcalls.markup import CALL_CLOSE, CALL_OPEN

_FUNCTION_RE = re.compile(r"<function=([^>\n]*)>(.*?)(?:</function>|(?=<function=)|\Z)", re.DOTALL)
_PARAM_RE = re.compile(r"<parameter=([^>\n]*)>(.*?)(?:</parameter>|(?=<parameter=)|\Z)", re.DOTALL)


def parse_hermes(inner: str) -> list[Found]:
    """``<tool_call>`` body: a JSON object (or array of them), or Qwen3-coder XML."""
    if inner.lstrip().startswith("<function="):
        return parse_qwen_xml(inner)
    if inner.lstrip().startswith("["):
        return parse_json_calls(inner, CALL_OPEN)
    return [parse_json_object(inner, f"{CALL_OPEN}...{CALL_CLOSE}")]


def parse_qwen_xml(text: str) -> list[Found]:
    """``<function=NAME><parameter=KEY>value</parameter>...</function>``, one or more.

    Values are raw text with one leading and one trailing newline removed, and they stay strings
    (``ls`` and ``123`` alike): without the tool's schema a number cannot be told from text that
    looks like one, and argument validation already converts ``"30"`` where a number is wanted.
    A function body that is a JSON object instead of parameters (Llama 3.1's
    ``<function=NAME>{...}</function>``) is read as the arguments.
    """
    matches = list(_FUNCTION_RE.finditer(text))
    if not matches:
        return [failed("expected <function=NAME> with <parameter=KEY>value</parameter> inside")]
    raw = len(matches) > 1
    return [_xml_call(m.group(1), m.group(2), m.group(0) if raw else None) for m in matches]


def parse_function_tag(inner: str) -> list[Found]:
    """The body of a ``<function=`` block that has no ``<tool_call>`` around it."""
    return parse_qwen_xml(f"<function={inner}</function>")


def _xml_call(name: str, body: str, raw: str | None) -> Found:
    name = name.strip()
    if not name:
        return failed("missing the tool name in <function=...>", raw=raw)
    params = list(_PARAM_RE.finditer(body))
    if not params:
        if body.strip().startswith("{"):
            found = json_arguments(name, body)
            return Found(found.name, found.arguments, found.error, raw)
        return Found(name, {}, None, raw)
    arguments: dict[str, Any] = {}
    for param in params:
        value = param.group(2)
        value = value.removeprefix("\n")
        arguments[param.group(1).strip()] = value.removesuffix("\n")
    return Found(name, arguments, None, raw)
