"""Where markup starts and ends in streamed text: the table of tagged blocks, and code fences.

Every question here is asked of the text seen so far, and answered "not yet" (hold it back)
whenever more text could change the answer.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from dataclasses import dataclass
from functools import partial
from typing import Literal

from engine.toolcalls import deepseek, gemma, hermes, llama, mistral
from engine.toolcalls.base import Found
from engine.toolcalls.json_calls import parse_json_calls, split_json_calls
from engine.toolcalls.markup import CALL_CLOSE, CALL_OPEN, RESPONSE_CLOSE, RESPONSE_OPEN
from engine.toolcalls.scan import EndFinder, FenceEnd


@dataclass(frozen=True)
class Block:
    """Markup with an opening tag: a think block, a call, a group of calls (DeepSeek), a block
    that is dropped (``hidden``) or a lone tag that is dropped (``stray``).

    A call ends at one of ``close`` (consumed), at one of ``ends`` (left for the enclosing mode:
    the call was not closed) or, with a ``finder``, wherever the finder says. ``parse`` reads the
    text between the opening tag and the end.
    """

    open: str
    close: tuple[str, ...]
    kind: Literal["reasoning", "call", "calls", "hidden", "stray"]
    parse: Callable[[str], list[Found]] | None = None
    ends: tuple[str, ...] = ()
    finder: Callable[[], EndFinder] | None = None
    inner: tuple[Block, ...] = ()


_DS_CALL = Block(
    deepseek.CALL_BEGIN,
    (deepseek.CALL_END,),
    "call",
    deepseek.parse_deepseek,
    (deepseek.CALL_BEGIN, deepseek.CALLS_END),
)
TAG_BLOCKS: tuple[Block, ...] = (
    Block("<think>", ("</think>",), "reasoning"),
    Block(CALL_OPEN, (CALL_CLOSE,), "call", hermes.parse_hermes, (CALL_OPEN,)),
    Block("<function=", ("</function>",), "call", hermes.parse_function_tag, ("<function=",)),
    Block(llama.PYTHON_TAG, llama.ENDS, "call", llama.parse_python_tag, (llama.PYTHON_TAG,)),
    Block(mistral.OPEN, (), "call", mistral.parse_mistral, finder=mistral.MistralEnd),
    Block(
        gemma.CALL_OPEN,
        (gemma.CALL_CLOSE,),
        "call",
        gemma.parse_function_gemma,
        (gemma.CALL_OPEN,),
    ),
    Block(deepseek.CALLS_BEGIN, (deepseek.CALLS_END,), "calls", inner=(_DS_CALL,)),
)
"""Blocks recognised anywhere in text."""

STRAY_BLOCKS: tuple[Block, ...] = (
    Block(RESPONSE_OPEN, (RESPONSE_CLOSE,), "hidden"),
    *(
        Block(tag, (), "stray")
        for tag in (
            CALL_CLOSE,
            RESPONSE_CLOSE,
            "</function>",
            gemma.CALL_CLOSE,
            *llama.ENDS,
            deepseek.CALL_END,
            deepseek.CALLS_END,
        )
    ),
)
"""Markup with no call in it, dropped from content when tools are on: a model imitating a tool
result (``<tool_response>...</tool_response>``, dropped whole, to the end of the turn if it is
never closed) or leaving a closing tag behind."""

_JSON_FENCE = Block(
    "```tool_call",
    ("```",),
    "call",
    partial(parse_json_calls, where="```tool_call"),
    finder=FenceEnd,
)
FENCE_BLOCKS = {
    "tool_call": _JSON_FENCE,
    "tool_calls": _JSON_FENCE,
    "tool_code": Block("```tool_code", ("```",), "call", gemma.parse_python_calls, finder=FenceEnd),
}
"""Fence languages that always mean a call."""
FENCE_LANGS = frozenset({"", "json", *FENCE_BLOCKS})
"""Fence languages held back as possible calls ("" and "json": only if the JSON is a call)."""


def bare_calls(text: str) -> list[Found] | None:
    """The calls in a whole turn that is nothing but calls: call-shaped JSON, or a Python list
    of calls (Llama 3.2 "pythonic"); ``None`` for anything else."""
    found = split_json_calls(text)
    if found is None and text.strip().startswith("["):
        return llama.parse_pythonic_list(text)
    return found


_INFO_RE = re.compile(r"[ \t]*([A-Za-z_]*)([ \t]*)\r?")
_BACKTICKS = re.compile("`+")

FenceAction = Literal["hold", "call", "open", "close"]


def earliest(buf: str, tags: Collection[str]) -> tuple[int, str | None]:
    """The position of the earliest of ``tags`` in ``buf`` (the longest on a tie), or
    ``(len(buf), None)``."""
    at, found = len(buf), None
    for tag in tags:
        i = buf.find(tag)
        if i != -1 and (i < at or (i == at and found is not None and len(tag) > len(found))):
            at, found = i, tag
    return at, found


def partial_start(buf: str, tags: Collection[str]) -> int:
    """Where the longest suffix of ``buf`` that could still begin one of ``tags`` starts."""
    longest = max((len(t) for t in tags), default=1)
    for start in range(max(0, len(buf) - longest + 1), len(buf)):
        if any(t.startswith(buf[start:]) for t in tags):
            return start
    return len(buf)


def backtick_run(text: str, pos: int = 0) -> int:
    """How many backticks start at ``text[pos]``."""
    run = _BACKTICKS.match(text, pos)
    return run.end() - pos if run else 0


def find_fence(
    buf: str, limit: int, *, line_start: bool, code_fence: int
) -> tuple[int, FenceAction, int, str] | None:
    """The first run of backticks at the start of a line in ``buf[:limit]`` that needs action,
    as ``(position, action, length, language)``.

    ``line_start`` says whether ``buf[0]`` is at the start of a line (after indentation);
    ``code_fence`` is the length of the fence that opened the ordinary code block the text is
    in (0: none). Actions: "hold" (wait for more of the line), "call" (a fence in
    :data:`FENCE_LANGS`; length covers its whole opening line), "open" and "close" (an ordinary
    code block; length covers the backticks).
    """
    pos = 0
    while (i := buf.find("`", pos, limit)) != -1:
        run = backtick_run(buf, i)
        pos = i + run
        j = i
        while j and buf[j - 1] in " \t":
            j -= 1
        if not (buf[j - 1] == "\n" if j else line_start):
            continue
        if pos == len(buf):
            return (i, "hold", 0, "")  # the run may grow
        if run < 3:
            continue
        rest = buf[pos:]
        if code_fence:
            after = rest.lstrip(" \t")
            if run < code_fence or (after and after[0] not in "\r\n"):
                continue  # not this code block's closing fence
            return (i, "close" if after else "hold", run, "")
        line, newline, _ = rest.partition("\n")
        info = _INFO_RE.fullmatch(line)
        if info is not None:
            lang = info.group(1).lower()
            if lang in FENCE_LANGS and newline:
                return (i, "call", run + len(line) + 1, lang)
            if not newline and any(
                known.startswith(lang) and (known == lang or not info.group(2))
                for known in FENCE_LANGS
            ):
                return (i, "hold", 0, "")
        return (i, "open", run, "")
    return None
