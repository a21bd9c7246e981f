"""Streaming tool-call parser: raw model text deltas in, typed parse events out.

A model's output arrives in deltas of any size, which may split a tag anywhere. The parser turns
them, in order, into :class:`TextPiece` (content or reasoning, streamed live), :class:`ArgsPreview`
(the raw inner text of a call while the model writes it) and :class:`ParsedToolCall` events.

Call markup recognised (each family's reader is a module of :mod:`engine.toolcalls`):

* Hermes/Qwen ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``, and Qwen3-coder XML
  ``<function=NAME><parameter=KEY>value</parameter></function>`` inside it or on its own;
* Llama 3.x ``<|python_tag|>{"name": ..., "parameters": {...}}`` (``;`` between calls), up to
  ``<|eom_id|>``/``<|eot_id|>``; Mistral ``[TOOL_CALLS][{...}, ...]`` and
  ``[TOOL_CALLS]name[ARGS]{...}``, ending where the JSON ends;
* FunctionGemma ``<start_function_call>call:NAME{k:<escape>v<escape>}<end_function_call>``;
  DeepSeek V3/V3.1 "tool calls begin" / "tool call begin" ... "tool call end" tokens;
* a fence at a line start: ```` ```tool_code ```` (Gemma, Python calls) and ```` ```tool_call ````
  are calls; ```` ```json ```` or a bare ```` ``` ```` is held back and is a call only if it holds
  nothing but call-shaped JSON, else content byte for byte. Ordinary code blocks are tracked so
  their closing fence is never taken for an opening one;
* a whole turn of bare call-shaped JSON (object or list) or a Python list of calls (Llama 3.2).

``<think>...</think>`` streams as reasoning; with tools disabled nothing else is special. An
unclosed call is parsed when the next block of its kind opens or at the end of the turn. With
tools enabled, no tool markup reaches content: an imitated result
(``<tool_response>...</tool_response>``) and stray closing tags (``</tool_call>``, ``<|eot_id|>``,
...) are dropped.
"""

from __future__ import annotations

from typing import Literal

from engine.toolcalls.base import Found, bounded, failed, is_json
from engine.toolcalls.events import ArgsPreview, ParsedToolCall, ParseEvent, TextPiece
from engine.toolcalls.json_calls import split_json_calls
from engine.toolcalls.markers import (
    FENCE_BLOCKS,
    STRAY_BLOCKS,
    TAG_BLOCKS,
    Block,
    FenceAction,
    backtick_run,
    bare_calls,
    earliest,
    find_fence,
    partial_start,
)
from engine.toolcalls.scan import EndFinder, JsonScan

__all__ = ["ToolCallParser"]


_Mode = Literal["text", "bare", "fence"] | Block


class ToolCallParser:
    """Parses one model turn. Call :meth:`feed` per delta, then :meth:`finish` once."""

    def __init__(self, *, tools_enabled: bool = True) -> None:
        self._tools = tools_enabled
        blocks = (*TAG_BLOCKS, *STRAY_BLOCKS) if tools_enabled else TAG_BLOCKS
        self._opens = {b.open: b for b in blocks if tools_enabled or b.kind == "reasoning"}
        self._mode: _Mode = "text"
        self._parent: _Mode = "text"  # where the call being written returns to
        self._buf = ""  # received but not yet consumed
        self._out: list[ParseEvent] = []
        self._done = False
        # Bare JSON is possible while no non-whitespace content and no call has been seen.
        self._bare_possible = tools_enabled
        self._line_start = True  # the consumed text ends at a line start (maybe indented)
        self._code_fence = 0  # backticks opening the ordinary code block we are in; 0: none
        self._next_index = 0
        # The call being written (mode is a call block).
        self._call_index, self._call_open, self._call_inner = 0, "", ""
        self._finder: EndFinder | None = None
        self._group_raw, self._group_calls = "", 0  # a group of calls (mode "calls")
        # Held text that may be JSON calls (mode "bare" or "fence").
        self._scan = JsonScan()
        self._fence_open = ""

    # -- public API ---------------------------------------------------------------------------

    def feed(self, delta: str) -> list[ParseEvent]:
        """Take the next raw text delta; return the events it completes (possibly none)."""
        if self._done:
            raise RuntimeError("ToolCallParser.feed() called after finish()")
        self._buf += delta
        self._process()
        return self._take()

    def finish(self) -> list[ParseEvent]:
        """End of the model turn: flush everything held back. The parser is done afterwards."""
        if self._done:
            raise RuntimeError("ToolCallParser.finish() called twice")
        self._done = True
        self._flush()
        return self._take()

    # -- the state machine --------------------------------------------------------------------

    def _process(self) -> None:
        while self._step():
            pass

    def _step(self) -> bool:
        """Make one move; False when more text is needed."""
        mode = self._mode
        if mode == "text":
            return self._text_step()
        if mode == "bare":
            if self._scan.scan(self._buf) != "bad":
                return False
            self._mode = "text"  # cannot be a single JSON value: stream it as text
            self._bare_possible = False
            return True
        if mode == "fence":
            return self._fence_step()
        assert isinstance(mode, Block)
        if mode.kind == "reasoning":
            text, tag = self._cut(mode.close)
            self._push(TextPiece("reasoning", text))
            if tag is not None:
                self._mode, self._line_start = "text", True
            return tag is not None
        if mode.kind == "hidden":
            _dropped, tag = self._cut(mode.close)
            if tag is not None:
                self._mode, self._line_start = "text", True
            return tag is not None
        if mode.kind == "calls":
            return self._group_step(mode)
        return self._call_step(mode)

    def _text_step(self) -> bool:
        if self._bare_possible:
            rest = self._buf.lstrip()
            if not rest:
                return False  # only whitespace so far: it may surround a bare JSON call
            if rest[0] in "{[":
                self._mode, self._scan = "bare", JsonScan()
                return True
        buf = self._buf
        at, tag = earliest(buf, self._opens)
        fence = None
        if self._tools:
            fence = find_fence(buf, at, line_start=self._line_start, code_fence=self._code_fence)
        if fence is not None:
            return self._fence_event(buf, *fence)
        if tag is None:
            keep = partial_start(buf, self._opens)
            self._content(buf[:keep])
            self._buf = buf[keep:]
            return False
        self._content(buf[:at])
        self._buf = buf[at + len(tag) :]
        block = self._opens[tag]
        if block.kind == "call":
            self._start_call(block, tag, "text")
        elif block.kind == "stray":
            pass  # dropped
        else:
            self._mode = block
            if block.kind == "calls":
                self._bare_possible = False
                self._group_raw, self._group_calls = tag, 0
        return True

    def _fence_event(self, buf: str, pos: int, action: FenceAction, length: int, lang: str) -> bool:
        self._content(buf[:pos])
        if action == "hold":
            self._buf = buf[pos:]
            return False
        opener, self._buf = buf[pos : pos + length], buf[pos + length :]
        if action == "call":
            block = FENCE_BLOCKS.get(lang)
            if block is not None:
                self._start_call(block, opener, "text")
            else:
                self._mode, self._scan, self._fence_open = "fence", JsonScan(fenced=True), opener
                self._bare_possible = False
            return True
        self._code_fence = length if action == "open" else 0
        self._content(opener)
        return True

    def _fence_step(self) -> bool:
        """A ```` ```json ```` fence is held until it is known to be calls or not."""
        status = self._scan.scan(self._buf)
        if status == "more":
            return False
        if status == "bad":
            self._bail_fence()
            return True
        buf, pos = self._buf, self._scan.pos
        end = pos + backtick_run(buf, pos)
        if end == len(buf):
            return False  # the closing run may grow
        self._fence_close(buf[:pos], buf[pos:end], buf[end:])
        return True

    def _fence_close(self, body: str, closer: str, rest: str) -> None:
        found = split_json_calls(body)
        if found is None and not is_json(body):
            self._bail_fence()
            return
        raw = self._fence_open + body + closer
        self._mode, self._buf = "text", rest
        if found is None:
            self._content(raw)  # JSON, but not a call: an ordinary code block
        else:
            self._emit(found, raw)
            self._line_start = False

    def _bail_fence(self) -> None:
        """The held fence is an ordinary code block: its opening line is content and the text
        after it is read again, as text inside that block."""
        self._mode = "text"
        self._code_fence = backtick_run(self._fence_open)
        self._content(self._fence_open)

    def _group_step(self, group: Block) -> bool:
        text, tag = self._cut((*group.close, *(b.open for b in group.inner)))
        self._group_raw += text + (tag or "")  # text between calls is markup, not content
        if tag is None:
            return False
        if tag in group.close:
            if not self._group_calls:
                reason = f"no {group.inner[0].open} inside {group.open}"
                self._emit([failed(reason)], self._group_raw)
            self._mode, self._line_start = "text", True
        else:
            self._group_calls += 1
            self._start_call(next(b for b in group.inner if b.open == tag), tag, group)
        return True

    def _call_step(self, block: Block) -> bool:
        if self._finder is not None:
            body, end = self._finder.feed(self._buf)
            self._buf = ""
            self._preview(body)
            if end is None:
                return False
            closer, self._buf = end
            self._end_call(closer)
            return True
        text, tag = self._cut((*block.close, *block.ends))
        self._preview(text)
        if tag is None:
            return False
        if tag in block.close:
            self._end_call(tag)
        else:  # the next block opened before this one was closed: it is the parent's to read
            self._buf = tag + self._buf
            self._end_call("")
        return True

    def _flush(self) -> None:
        mode = self._mode
        if mode == "bare":
            self._finish_bare()
        elif mode == "fence":
            self._finish_fence()
        elif mode == "text":
            self._content(self._buf)
        elif mode.kind == "reasoning":
            self._push(TextPiece("reasoning", self._buf))
        elif mode.kind == "hidden":
            pass  # an imitated tool result that never closed: dropped
        elif mode.kind == "calls":
            if not self._group_calls:
                raw = self._group_raw + self._buf
                self._emit([failed(f"no {mode.inner[0].open} inside {mode.open}")], raw)
        else:
            body, closer = self._finder.flush() if self._finder else (self._buf, "")
            self._preview(body)
            self._end_call(closer)
        self._buf = ""

    def _finish_bare(self) -> None:
        found = bare_calls(self._buf)
        if found is not None:
            self._emit(found, None)
        elif is_json(self._buf):
            self._content(self._buf)
        else:  # not JSON at all: read it as ordinary text (tags included), then flush
            self._mode = "text"
            self._bare_possible = False
            self._process()
            self._flush()

    def _finish_fence(self) -> None:
        buf = self._buf
        if self._scan.scan(buf) == "fence":
            self._fence_close(buf[: self._scan.pos], buf[self._scan.pos :], "")
        elif split_json_calls(buf) is not None or is_json(buf):
            self._fence_close(buf, "", "")  # the closing fence never came
        else:
            self._bail_fence()
        self._process()
        self._flush()

    def _cut(self, tags: tuple[str, ...]) -> tuple[str, str | None]:
        """Consume the buffer through the earliest of ``tags``: ``(text before, tag)``. With no
        tag, consume all but a suffix that could still begin one: ``(text, None)``."""
        buf = self._buf
        at, tag = earliest(buf, tags)
        if tag is None:
            at = partial_start(buf, tags)
        self._buf = buf[at + len(tag) if tag is not None else at :]
        return buf[:at], tag

    # -- calls --------------------------------------------------------------------------------

    def _start_call(self, block: Block, opener: str, parent: _Mode) -> None:
        self._bare_possible = False
        self._mode, self._parent = block, parent
        self._call_index = self._next_index
        self._next_index += 1
        self._call_open, self._call_inner = opener, ""
        self._finder = block.finder() if block.finder is not None else None

    def _preview(self, text: str) -> None:
        self._call_inner += text
        if text:
            self._push(ArgsPreview(self._call_index, text))

    def _end_call(self, closer: str) -> None:
        block = self._mode
        assert isinstance(block, Block) and block.parse is not None
        raw = self._call_open + self._call_inner + closer
        self._emit(block.parse(self._call_inner), raw, self._call_index)
        self._mode, self._finder = self._parent, None
        self._line_start = not closer.startswith("`")

    def _emit(self, found: list[Found], raw: str | None, first_index: int | None = None) -> None:
        """Push calls. ``raw`` is the markup they came from (``None``: each call's own text); a
        call's own text is used whenever one block held several."""
        for call in map(bounded, found):
            if first_index is not None:
                index, first_index = first_index, None
            else:
                index = self._next_index
                self._next_index += 1
            own = call.raw is not None and (raw is None or len(found) > 1)
            call_raw = (call.raw if own else raw) or ""
            self._push(ParsedToolCall(index, call.name, call.arguments, call_raw, call.error))

    # -- output -------------------------------------------------------------------------------

    def _content(self, text: str) -> None:
        if not text:
            return
        self._push(TextPiece("content", text))
        if text.strip():
            self._bare_possible = False
        newline = text.rfind("\n")
        indent_only = not text[newline + 1 :].strip(" \t")
        self._line_start = (newline != -1 or self._line_start) and indent_only

    def _push(self, event: ParseEvent) -> None:
        """Queue an event, dropping empty deltas and merging with an adjacent delta of its kind."""
        last = self._out[-1] if self._out else None
        if isinstance(event, TextPiece):
            if not event.text:
                return
            if isinstance(last, TextPiece) and last.kind == event.kind:
                self._out[-1] = TextPiece(event.kind, last.text + event.text)
                return
        elif (
            isinstance(event, ArgsPreview)
            and isinstance(last, ArgsPreview)
            and last.index == event.index
        ):
            self._out[-1] = ArgsPreview(event.index, last.text + event.text)
            return
        self._out.append(event)

    def _take(self) -> list[ParseEvent]:
        out, self._out = self._out, []
        return out
