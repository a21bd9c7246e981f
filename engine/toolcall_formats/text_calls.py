"""Call formats that are not JSON: Qwen3-coder XML, FunctionGemma and Python call syntax
(Gemma ```` ```tool_code ````, Llama 3.2 "pythonic" lists)."""

from __future__ import annotations

import ast
import json
import re
import textwrap
from typing import Any

from engine.toolcall_formats.base import Found, failed, json_arguments, skip_ws

_FUNCTION_RE = re.compile(r"<function=([^>\n]*)>(.*?)(?:</function>|(?=<function=)|\Z)", re.DOTALL)
_PARAM_RE = re.compile(r"<parameter=([^>\n]*)>(.*?)(?:</parameter>|(?=<parameter=)|\Z)", re.DOTALL)
_NUMBER_RE = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")
_SCALARS: dict[str, Any] = {"true": True, "false": False, "null": None}
_ESCAPE = "<escape>"

# -- Qwen3-coder XML ----------------------------------------------------------------------------


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


# -- FunctionGemma ------------------------------------------------------------------------------


def parse_function_gemma(inner: str) -> list[Found]:
    """``call:NAME{key:<escape>text<escape>,n:3,flag:true,obj:{...},list:[...]}``."""
    text = inner.strip()
    if not text.startswith("call:"):
        return [failed("expected call:<tool name>{key:value,...} after <start_function_call>")]
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


# -- Python call syntax -------------------------------------------------------------------------


def parse_python_calls(source: str) -> list[Found]:
    """Gemma ```` ```tool_code ````: one call per line (or a list of calls), keyword arguments
    with literal values only. ``print(...)`` around a call and a module prefix such as
    ``default_api.`` are dropped."""
    code = textwrap.dedent(source).strip()
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        return [failed(f"invalid Python call syntax: {exc.msg} (line {exc.lineno})")]
    nodes: list[ast.expr] = []
    for stmt in tree.body:
        if not isinstance(stmt, ast.Expr):
            return [failed("expected only function calls like tool_name(arg=value)")]
        value = stmt.value
        nodes.extend(value.elts if isinstance(value, ast.List | ast.Tuple) else [value])
    if not nodes:
        return [failed("no function call found; write tool_name(arg=value)")]
    many = len(nodes) > 1
    return [_python_call(n, ast.get_source_segment(code, n) if many else None) for n in nodes]


def parse_pythonic_list(text: str) -> list[Found] | None:
    """A whole turn that is a Python list of calls (Llama 3.2 ``[f(a=1), g(b="x")]``), or
    ``None`` unless every element is a clean keyword-argument call."""
    code = text.strip()
    try:
        tree = ast.parse(code, mode="eval")
    except SyntaxError:
        return None
    if not isinstance(tree.body, ast.List) or not tree.body.elts:
        return None
    found = [_python_call(n, ast.get_source_segment(code, n)) for n in tree.body.elts]
    return None if any(f.error for f in found) else found


def _func_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr  # default_api.terminal -> terminal
    return None


def _python_call(node: ast.expr, raw: str | None) -> Found:
    if (
        isinstance(node, ast.Call)
        and _func_name(node.func) == "print"
        and len(node.args) == 1
        and not node.keywords
        and isinstance(node.args[0], ast.Call)
    ):
        node = node.args[0]
    if not isinstance(node, ast.Call):
        shown = ast.unparse(node)
        return failed(f"expected a function call like tool_name(arg=value), got {shown}", raw=raw)
    name = _func_name(node.func)
    if name is None:
        return failed(f"cannot call {ast.unparse(node.func)}; use a tool name", raw=raw)
    if node.args:
        return failed(
            f"{name}() takes keyword arguments only, like {name}(arg=value); "
            f"got {len(node.args)} positional argument(s)",
            name,
            raw,
        )
    arguments: dict[str, Any] = {}
    for keyword in node.keywords:
        if keyword.arg is None:
            return failed(f"{name}(): write each argument as name=value, not **", name, raw)
        try:
            arguments[keyword.arg] = _plain(ast.literal_eval(keyword.value))
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            shown = ast.unparse(keyword.value)
            reason = (
                f"argument {keyword.arg!r} of {name}() must be a literal (string, number, "
                f"True/False/None, list or dict), got {shown}"
            )
            return failed(reason, name, raw)
    return Found(name, arguments, None, raw)


def _plain(value: object) -> Any:
    """``value`` as JSON-like data (tuples become lists); ``ValueError`` for anything else."""
    if value is None or isinstance(value, str | bool | int | float):
        return value
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {k: _plain(v) for k, v in value.items()}
    raise ValueError(type(value).__name__)
