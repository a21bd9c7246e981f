"""Llama 3.x: ``<|python_tag|>`` followed by JSON calls (``;`` between them) up to ``<|eom_id|>`` or
``<|eot_id|>``, and Llama 3.2's "pythonic" turn, a Python list of calls."""

from __future__ import annotations

import ast

from engine.toolcalls.base import Found
from engine.toolcalls.json_calls import parse_json_calls
from engine.toolcalls.python_calls import parse_source, python_call

PYTHON_TAG = "<|python_tag|>"
ENDS = ("<|eom_id|>", "<|eot_id|>")


def parse_python_tag(inner: str) -> list[Found]:
    """The calls after ``<|python_tag|>``."""
    return parse_json_calls(inner, PYTHON_TAG)


def parse_pythonic_list(text: str) -> list[Found] | None:
    """A whole turn that is a Python list of calls (Llama 3.2 ``[f(a=1), g(b="x")]``), or
    ``None`` unless every element is a clean keyword-argument call."""
    code = text.strip()
    tree = parse_source(code, mode="eval")
    if not isinstance(tree, ast.Expression):
        return None
    if not isinstance(tree.body, ast.List) or not tree.body.elts:
        return None
    found = [python_call(n, ast.get_source_segment(code, n)) for n in tree.body.elts]
    return None if any(f.error for f in found) else found
