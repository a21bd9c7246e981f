"""Fuzzing the streaming tool-call parser: whatever a model writes, in whatever chunks, the
parser raises nothing, never hangs, and loses nothing: content is the model's text in order (all
of it when tools are off), every call's markup is text the model wrote, and chunking changes
nothing. Every family's markup is also cut at every byte (a model stopped by maxTokens)."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.toolcalls import ParsedToolCall, TextPiece, ToolCallParser
from engine.toolcalls import deepseek as ds
from tests.stress.fuzz_settings import LONG, fuzz_settings
from tests.unit.test_toolcall_families import GOLDEN
from tests.unit.test_toolcalls import feed_chunks, merged

FRAGMENTS = [
    "<tool_call>",
    "</tool_call>",
    "<think>",
    "</think>",
    "<tool_response>",
    "</tool_response>",
    "<function=terminal>",
    "<parameter=command>",
    "</parameter>",
    "</function>",
    "<|python_tag|>",
    "<|eom_id|>",
    "<|eot_id|>",
    "[TOOL_CALLS]",
    "[ARGS]",
    "<start_function_call>",
    "<end_function_call>",
    "call:terminal",
    "<escape>",
    ds.CALLS_BEGIN,
    ds.CALL_BEGIN,
    ds.SEP,
    ds.CALL_END,
    ds.CALLS_END,
    "```",
    "```json\n",
    "```tool_code\n",
    "```tool_call\n",
    "\n",
    " ",
    "{",
    "}",
    "[",
    "]",
    '"name"',
    '"arguments"',
    '"parameters"',
    ": ",
    ", ",
    '"terminal"',
    '"ls"',
    "terminal(",
    "command=",
    ")",
    "-",
    "9" * 50,
    "NaN",
    "1e999",
    "\\",
    '"',
    "\x00",
    "é",
]

model_text = st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=6), max_size=40).map("".join)


def _check(text: str, events: list[Any], *, tools_enabled: bool) -> None:
    content = "".join(e.text for e in events if isinstance(e, TextPiece) and e.kind == "content")
    if not tools_enabled and "<think>" not in text:
        assert content == text
    position = 0
    for char in content:  # content is the model's text, in order (markup taken out)
        position = text.find(char, position)
        assert position != -1, (text, content)
        position += 1
    for event in events:
        if isinstance(event, ParsedToolCall) and event.raw:
            assert event.raw.strip() in text or event.error is not None, (text, event)


def _chunks(text: str, cuts: list[int]) -> list[str]:
    points = sorted({c % (len(text) + 1) for c in cuts} | {0, len(text)})
    return [text[a:b] for a, b in itertools.pairwise(points)]


@given(model_text, st.lists(st.integers(0, 10_000), max_size=8), st.booleans())
@fuzz_settings(3000 if LONG else 400)
def test_any_model_output_in_any_chunks_parses_without_loss(
    text: str, cuts: list[int], tools_enabled: bool
) -> None:
    whole = merged(feed_chunks([text], tools_enabled=tools_enabled))
    _check(text, whole, tools_enabled=tools_enabled)
    chunked = merged(feed_chunks(_chunks(text, cuts), tools_enabled=tools_enabled))
    assert chunked == whole


FAMILY_TEXTS = [p.values[0] for p in GOLDEN]


@pytest.mark.parametrize("text", FAMILY_TEXTS, ids=[str(i) for i in range(len(FAMILY_TEXTS))])
def test_every_familys_markup_cut_at_every_byte_parses(text: str) -> None:
    data = text.encode()
    for end in range(len(data) + 1):
        prefix = data[:end].decode("utf-8", errors="ignore")
        parser = ToolCallParser()
        events = merged([*parser.feed(prefix), *parser.finish()])
        _check(prefix, events, tools_enabled=True)
