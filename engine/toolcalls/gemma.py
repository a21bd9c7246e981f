"""Gemma: FunctionGemma's ``<start_function_call>call:NAME{...}<end_function_call>`` and Gemma's
```` ```tool_code ```` fences of Python calls."""

from __future__ import annotations

import ast
import json
import re
import textwrap
from typing import Any

from engine.toolcalls.base import Found, failed, skip_ws
from engine.toolcalls.python_calls import parse_source, python_call

_NUMBER_RE = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")
_SCALARS: dict[str, Any] = {"true": True, "false": False, "null": None}
_ESCAPE = "<escape>"
CALL_OPEN = "<start_function_call>"
CALL_CLOSE = "<end_function_call>"

# -- FunctionGemma ------------------------------------------------------------------------------


def parse_function_gemma(inner: str) -> list[Found]:
    """``call:NAME{key:<escape>text<escape>,n:3,flag:true,obj:{...},list:[...]}``."""
    text = inner.strip()
    if not text.startswith("call:"):
        return [failed(f"expected call:<tool name>{{key:value,...}} after {CALL_OPEN}")]
    brace = text.find("{")
    name = text[5 : brace if brace != -1 else len(text)].strip()
    if not name:
        return [failed("missing the tool name after call:")]
    if brace == -1:
        return [Found(name, {})]
    try:
        arguments, _ = _GemmaArgs(text).object(brace)
    except ValueError as exc:
        return [failed(f"{exc} in the arguments of {name}", name)]
    except RecursionError:
        return [failed(f"the arguments of {name} are nested too deeply", name)]
    return [Found(name, arguments)]


class _GemmaArgs:
    """A reader for FunctionGemma's argument syntax: JSON-like, unquoted keys, strings between
    ``<escape>`` tokens."""

    def __init__(self, text: str) -> None:
        self.text = text

    def _expect_more(self, pos: int) -> None:
        if pos >= len(self.text):
            raise ValueError("unexpected end of text")

    def value(self, pos: int) -> tuple[Any, int]:
        text = self.text
        pos = skip_ws(text, pos)
        self._expect_more(pos)
        if text.startswith(_ESCAPE, pos):
            end = text.find(_ESCAPE, pos + len(_ESCAPE))
            if end == -1:
                raise ValueError("unterminated <escape> string")
            return text[pos + len(_ESCAPE) : end], end + len(_ESCAPE)
        if text[pos] == "{":
            return self.object(pos)
        if text[pos] == "[":
            return self.array(pos)
        end = pos
        while end < len(text) and text[end] not in ",}]":
            end += 1
        token = text[pos:end].strip()
        if not token:
            raise ValueError(f"missing value at character {pos}")
        if token in _SCALARS:
            return _SCALARS[token], end
        if _NUMBER_RE.fullmatch(token):
            return json.loads(token), end
        return token, end  # an unescaped string: lenient

    def object(self, pos: int) -> tuple[dict[str, Any], int]:
        text, result = self.text, dict[str, Any]()
        pos = skip_ws(text, pos + 1)
        if text.startswith("}", pos):
            return result, pos + 1
        while True:
            colon = text.find(":", pos)
            key = text[pos:colon].strip() if colon != -1 else ""
            if not key or any(c in key for c in "{}[],<>"):
                raise ValueError(f"expected key:value at character {pos}")
            result[key], pos = self.value(colon + 1)
            pos = skip_ws(text, pos)
            self._expect_more(pos)
            if text[pos] == "}":
                return result, pos + 1
            if text[pos] != ",":
                raise ValueError(f"expected ',' or '}}' at character {pos}")
            pos = skip_ws(text, pos + 1)

    def array(self, pos: int) -> tuple[list[Any], int]:
        text, items = self.text, list[Any]()
        pos = skip_ws(text, pos + 1)
        if text.startswith("]", pos):
            return items, pos + 1
        while True:
            item, pos = self.value(pos)
            items.append(item)
            pos = skip_ws(text, pos)
            self._expect_more(pos)
            if text[pos] == "]":
                return items, pos + 1
            if text[pos] != ",":
                raise ValueError(f"expected ',' or ']' at character {pos}")
            pos += 1


# -- tool_code ---------------------------------------------------------------------------------


def parse_python_calls(source: str) -> list[Found]:
    """Gemma ```` ```tool_code ````: one call per line (or a list of calls), keyword arguments
    with literal values only. ``print(...)`` around a call and a module prefix such as
    ``default_api.`` are dropped."""
    code = textwrap.dedent(source).strip()
    tree = parse_source(code)
    if isinstance(tree, str):
        return [failed(tree)]
    assert isinstance(tree, ast.Module)
    nodes: list[ast.expr] = []
    for stmt in tree.body:
        if not isinstance(stmt, ast.Expr):
            return [failed("expected only function calls like tool_name(arg=value)")]
        value = stmt.value
        nodes.extend(value.elts if isinstance(value, ast.List | ast.Tuple) else [value])
    if not nodes:
        return [failed("no function call found; write tool_name(arg=value)")]
    many = len(nodes) > 1
    return [python_call(n, ast.get_source_segment(code, n) if many else None) for n in nodes]
