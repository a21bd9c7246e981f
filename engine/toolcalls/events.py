"""What the streaming parser produces: visible text, call previews and complete calls."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal


@dataclass(frozen=True)
class TextPiece:
    """A delta of visible content or of reasoning; never cumulative, never empty."""

    kind: Literal["content", "reasoning"]
    text: str


@dataclass(frozen=True)
class ArgsPreview:
    """A delta of a call's raw inner text while the model writes it. A live preview only."""

    index: int
    text: str


@dataclass(frozen=True)
class ParsedToolCall:
    """A complete tool call. ``error`` is set when call markup was found but could not be parsed;
    it is a reason written for the model to read."""

    index: int
    name: str
    arguments: dict[str, Any]
    raw: str
    error: str | None = None


ParseEvent = TextPiece | ArgsPreview | ParsedToolCall
