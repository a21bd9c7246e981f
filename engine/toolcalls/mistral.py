"""Mistral: ``[TOOL_CALLS]`` followed by a JSON array of calls (v3) or by
``name[ARGS]{...}`` (v11+). There is no closing tag: a call ends where its JSON value ends."""

from __future__ import annotations

import re

from engine.toolcalls.base import Found, failed, json_arguments
from engine.toolcalls.json_calls import parse_json_calls
from engine.toolcalls.scan import JsonScan

OPEN = "[TOOL_CALLS]"
_MISTRAL_TOKENS = ("[ARGS]", "[CALL_ID]")
_MISTRAL_HEAD_RE = re.compile(r"\s*([^\s\[\]{}]+)(?:\[CALL_ID\][^\[]*)?\[ARGS\]\s*")


def parse_mistral(inner: str) -> list[Found]:
    """After ``[TOOL_CALLS]``: a JSON array of calls (v3) or ``name[ARGS]{...}`` (v11+)."""
    start = mistral_json_start(inner)
    head = inner if start is None else inner[:start]
    if start is not None and not head.strip():
        return parse_json_calls(inner, OPEN)
    match = _MISTRAL_HEAD_RE.fullmatch(head)
    if start is None or match is None:
        guess = re.match(r"\s*([^\s\[\]{}]*)", head)
        shape = '[{"name": ..., "arguments": {...}}] or <tool name>[ARGS]{...}'
        return [failed(f"expected {shape} after {OPEN}", guess.group(1) if guess else "")]
    return [json_arguments(match.group(1), inner[start:])]


def mistral_json_start(text: str) -> int | None:
    """Where the JSON of a ``[TOOL_CALLS]`` call starts in ``text``, skipping ``[ARGS]`` and
    ``[CALL_ID]`` tokens; ``None`` while it is not known yet."""
    pos = 0
    while True:
        starts = [i for i in (text.find("{", pos), text.find("[", pos)) if i != -1]
        if not starts:
            return None
        i = min(starts)
        if text[i] == "{":
            return i
        for token in _MISTRAL_TOKENS:
            if text.startswith(token, i):
                pos = i + len(token)
                break
            if token.startswith(text[i:]):
                return None  # could still become this token
        else:
            return i


class MistralEnd:
    """``[TOOL_CALLS]`` has no closing tag: the call ends where its JSON value ends."""

    def __init__(self) -> None:
        self._text = ""
        self._scan: JsonScan | None = None

    def feed(self, text: str) -> tuple[str, tuple[str, str] | None]:
        base = len(self._text)
        self._text += text
        if self._scan is None:
            start = mistral_json_start(self._text)
            if start is None:
                return text, None
            self._scan = JsonScan(stop_at_end=True, pos=start)
        if self._scan.scan(self._text) == "more":
            return text, None
        end = self._scan.pos  # "end": just after the value; "bad": where it went wrong
        return self._text[base:end], ("", self._text[end:])

    def flush(self) -> tuple[str, str]:
        return "", ""
