"""The one writer of tool-call markup: what Gatehouse itself writes for a model to read.

Gatehouse speaks the Hermes format to the models it prompts itself: a call is
``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` and a result goes back inside
``<tool_response>``. The system prompt's examples, the OpenAI backend's translation of native
calls, the llama.cpp grammar and the Hermes reader all take their spelling from here.
"""

from __future__ import annotations

import json
from typing import Any

CALL_OPEN = "<tool_call>"
CALL_CLOSE = "</tool_call>"
RESPONSE_OPEN = "<tool_response>"
RESPONSE_CLOSE = "</tool_response>"


def call_markup(name: str, arguments: Any) -> str:
    """One call. ``arguments`` is normally an object; anything else is written as it is, so a
    reader tells the model exactly what was wrong with it."""
    call = json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)
    return f"{CALL_OPEN}\n{call}\n{CALL_CLOSE}"


def response_markup(name: str | None, content: str) -> str:
    """One tool result, labelled with the tool's name."""
    return f"{RESPONSE_OPEN}\n{name}: {content}\n{RESPONSE_CLOSE}"


def stop_markup(*, calls: bool) -> tuple[str, ...]:
    """Stop sequences for a model turn: markup that never belongs in an answer. A turn that may
    call tools keeps the call tags (the call must close); results are never the model's to write."""
    results = (RESPONSE_OPEN, RESPONSE_CLOSE)
    return results if calls else (*results, CALL_OPEN, CALL_CLOSE)


def call_grammar_root(call_rule: str) -> str:
    """The GBNF root rule for exactly one call whose JSON is the rule ``call_rule``."""
    return f'root ::= "{CALL_OPEN}\\n" {call_rule} "\\n{CALL_CLOSE}"\n'
