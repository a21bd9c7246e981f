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
