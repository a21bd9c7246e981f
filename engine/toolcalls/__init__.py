"""Tool calls in model output: a streaming parser that knows ten model families' markup.

:class:`ToolCallParser` turns raw text deltas into :class:`TextPiece`, :class:`ArgsPreview` and
:class:`ParsedToolCall` events (see :mod:`engine.toolcalls.parser`). Each family's reader has a
module of its own (:mod:`.hermes`, :mod:`.llama`, :mod:`.mistral`, :mod:`.gemma`,
:mod:`.deepseek`, with the shared JSON and Python-call readers in :mod:`.json_calls` and
:mod:`.python_calls`); :mod:`.markers` is the table of where each one's markup starts and ends.
What Gatehouse itself writes for models is in :mod:`engine.toolcalls.markup`.
"""

from engine.toolcalls.events import ArgsPreview, ParsedToolCall, ParseEvent, TextPiece
from engine.toolcalls.parser import ToolCallParser

__all__ = ["ArgsPreview", "ParseEvent", "ParsedToolCall", "TextPiece", "ToolCallParser"]
