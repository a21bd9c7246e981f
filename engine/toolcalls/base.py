"""What every tool-call format parser returns, and the error wording the model reads."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

ERROR_PREFIX = "Could not parse tool call: "

_JSON_TYPES: dict[type, str] = {
    dict: "object",
    list: "array",
    str: "string",
    int: "number",
    float: "number",
    bool: "boolean",
    type(None): "null",
}


@dataclass(frozen=True)
class Found:
    """One call read from a block of call markup.

    ``error`` is a reason written for the model (it starts with :data:`ERROR_PREFIX`). ``raw`` is
    the call's own text when one block holds several calls; ``None`` means "the whole block".
    """

    name: str
    arguments: dict[str, Any]
    error: str | None = None
    raw: str | None = None


def failed(reason: str, name: str = "", raw: str | None = None) -> Found:
    """A call that could not be read, with ``reason`` for the model."""
    return Found(name, {}, ERROR_PREFIX + reason, raw)


def json_type(value: object) -> str:
    """The JSON name of ``value``'s type ("object", "array", ...)."""
    return _JSON_TYPES.get(type(value), type(value).__name__)


def json_error(exc: json.JSONDecodeError) -> str:
    return f"{exc.msg} at line {exc.lineno} column {exc.colno}"


MAX_ARGUMENT_DEPTH = 64
"""Arguments nested deeper than this are refused: a failed call, never a broken turn."""


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:20]} is out of range")
    return value


_DECODER = json.JSONDecoder(parse_constant=_no_constant, parse_float=_finite)


def raw_decode(text: str, pos: int = 0) -> tuple[Any, int]:
    """``json.JSONDecoder().raw_decode``, with nesting too deep for Python's stack, integers too
    long to convert, NaN, Infinity and out-of-range numbers reported as a
    :class:`json.JSONDecodeError` like any other bad JSON."""
    try:
        return _DECODER.raw_decode(text, pos)
    except RecursionError:
        raise json.JSONDecodeError("Nesting too deep", text, pos) from None
    except json.JSONDecodeError:
        raise
    except ValueError as exc:  # e.g. an integer of more than 4300 digits
        raise json.JSONDecodeError(str(exc).split(";")[0], text, pos) from None


def depth(value: object) -> int:
    """How deeply ``value`` nests lists and dicts (iteratively: any depth is measured)."""
    deepest = 0
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, list | tuple):
            level += 1
            deepest = max(deepest, level)
            stack.extend((child, level) for child in item)
    return deepest


def bounded(found: Found) -> Found:
    """``found``, or a failed call when its arguments are nested too deeply to pass on (every
    layer after the parser would have to recurse through them)."""
    if found.error is None and depth(found.arguments) > MAX_ARGUMENT_DEPTH:
        reason = f"the arguments are nested more than {MAX_ARGUMENT_DEPTH} levels deep"
        return failed(reason, found.name, found.raw)
    return found


def loads(text: str) -> Any:
    """``json.loads`` with the same treatment of deep nesting as :func:`raw_decode`."""
    value, end = raw_decode(text, skip_ws(text, 0))
    if skip_ws(text, end) != len(text):
        raise json.JSONDecodeError("Extra data", text, end)
    return value


def is_json(text: str) -> bool:
    """Whether ``text`` is exactly one JSON value (surrounding whitespace allowed)."""
    try:
        loads(text)
    except json.JSONDecodeError:
        return False
    return True


def skip_ws(text: str, pos: int) -> int:
    while pos < len(text) and text[pos].isspace():
        pos += 1
    return pos


def json_arguments(name: str, text: str) -> Found:
    """A call to ``name`` whose arguments are the JSON object starting ``text`` (blank: none)."""
    if not text.strip():
        return Found(name, {})
    try:
        arguments, _ = raw_decode(text, skip_ws(text, 0))
    except json.JSONDecodeError as exc:
        return failed(f"arguments are not valid JSON: {json_error(exc)}", name)
    if not isinstance(arguments, dict):
        return failed(f"arguments must be a JSON object, got {json_type(arguments)}", name)
    return Found(name, arguments)
