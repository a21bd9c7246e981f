"""Python call syntax, read without running anything: ``tool_name(arg=value, ...)`` with literal
arguments. Gemma's ```` ```tool_code ```` fences and Llama 3.2's "pythonic" lists use it."""

from __future__ import annotations

import ast
from typing import Any

from engine.toolcalls.base import Found, failed


def _func_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr  # default_api.terminal -> terminal
    return None


_UNPARSEABLE = (SyntaxError, ValueError, RecursionError, MemoryError)
"""What ``ast.parse`` raises on text it cannot take (ValueError: a NUL byte; RecursionError and
MemoryError: nesting such as ``n=-----...1``)."""


def parse_source(code: str, mode: str = "exec") -> ast.AST | str:
    """``ast.parse(code)``, or why it cannot be read (never an exception)."""
    try:
        return ast.parse(code, mode=mode)
    except SyntaxError as exc:
        return f"invalid Python call syntax: {exc.msg} (line {exc.lineno})"
    except _UNPARSEABLE:
        return "the Python call is nested too deeply or holds a NUL byte"


def _shown(node: ast.AST) -> str:
    try:
        return ast.unparse(node)
    except RecursionError:
        return "an expression nested too deeply to show"


def python_call(node: ast.expr, raw: str | None) -> Found:
    if (
        isinstance(node, ast.Call)
        and _func_name(node.func) == "print"
        and len(node.args) == 1
        and not node.keywords
        and isinstance(node.args[0], ast.Call)
    ):
        node = node.args[0]
    if not isinstance(node, ast.Call):
        shown = _shown(node)
        return failed(f"expected a function call like tool_name(arg=value), got {shown}", raw=raw)
    name = _func_name(node.func)
    if name is None:
        return failed(f"cannot call {_shown(node.func)}; use a tool name", raw=raw)
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
            shown = _shown(keyword.value)
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
