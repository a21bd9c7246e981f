"""The scripted backend: a model whose every output is written down in advance.

The script is JSON ``{"turns": [...]}``. Each model call takes the next turn as the model's raw
output and streams it in several chunks through exactly the same parsing path as a real model.
When the turns run out the model says nothing. A turn is a string, or an object
``{"text": "...", "chunkDelayMs": 20}`` when a harness needs a slow model (to cancel mid-stream);
``"failWith": "why"`` in it makes the model break after its text; with ``"recall": true`` the
turn's text is followed by every user message the model was given, joined by `` | `` (to show
which history a resumed session brought back).
"""

from __future__ import annotations

import asyncio
import json
import math
import re
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.backends.base import (
    Backend,
    BackendError,
    Finish,
    GenerationOptions,
    Message,
    Notice,
    ToolSpec,
)

_TOKEN = re.compile(r"\s*\w+|\s*[^\w\s]|\s+")


@dataclass(frozen=True)
class ScriptedTurn:
    text: str
    chunk_delay_seconds: float = 0.0
    fail_with: str | None = None
    """After its text, the model breaks with this error (tests of ``stopReason: error``)."""
    recall: bool = False


def split_into_tokens(text: str) -> list[str]:
    """Split text as a BPE tokenizer might: a word or a punctuation mark, with its leading space.

    Tags such as ``<tool_call>`` come out in several pieces, so the streaming parser is exercised
    the same way a real model exercises it.
    """
    return _TOKEN.findall(text)


def _parse_turn(index: int, raw: Any) -> ScriptedTurn:
    if isinstance(raw, str):
        return ScriptedTurn(raw)
    if isinstance(raw, dict) and isinstance(raw.get("text"), str):
        delay = raw.get("chunkDelayMs", 0)
        valid = isinstance(delay, int | float) and not isinstance(delay, bool)
        if not valid or not math.isfinite(delay) or delay < 0:
            raise BackendError(f"turns[{index}].chunkDelayMs must be a number >= 0")
        fail = raw.get("failWith")
        if fail is not None and not isinstance(fail, str):
            raise BackendError(f"turns[{index}].failWith must be a string")
        return ScriptedTurn(
            raw["text"], float(delay) / 1000.0, fail, recall=raw.get("recall") is True
        )
    raise BackendError(f'turns[{index}] must be a string or an object with a "text" string')


def parse_script(data: Any) -> list[ScriptedTurn]:
    """Validate a decoded script document."""
    if not isinstance(data, dict) or not isinstance(data.get("turns"), list):
        raise BackendError('A script must be a JSON object {"turns": [string, ...]}')
    return [_parse_turn(i, raw) for i, raw in enumerate(data["turns"])]


def load_script(path: str | Path) -> list[ScriptedTurn]:
    """Read and validate a script file; every problem is a :class:`BackendError` naming the file."""
    data = _load_document(path)
    try:
        return parse_script(data)
    except BackendError as exc:
        raise BackendError(f"Script {path}: {exc}") from None


def _load_document(path: str | Path) -> Any:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise BackendError(f"Cannot read script {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise BackendError(f"Script {path} is not UTF-8 text: {exc}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise BackendError(f"Script {path} is not valid JSON: {exc}") from None


class ScriptedBackend(Backend):
    """Replays scripted turns; one cursor for the whole server: each model call takes the next."""

    name = "scripted"

    def __init__(
        self, turns: Sequence[ScriptedTurn], *, model: str = "script", one_at_a_time: bool = False
    ) -> None:
        self.model = model
        self._turns = list(turns)
        self._cursor = 0
        self.one_at_a_time = one_at_a_time

    @classmethod
    def from_file(cls, path: str | Path) -> ScriptedBackend:
        """A script file; ``"oneAtATime": true`` in it makes the model serve one model turn at a
        time, queued like a local model."""
        turns = load_script(path)
        serial = _load_document(path).get("oneAtATime") is True
        return cls(turns, model=Path(path).name, one_at_a_time=serial)

    @property
    def remaining_turns(self) -> int:
        return len(self._turns) - self._cursor

    async def stream(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        options: GenerationOptions,
    ) -> AsyncGenerator[str | Notice | Finish, None]:
        if self._cursor >= len(self._turns):
            yield Finish("stop")
            return
        turn = self._turns[self._cursor]
        self._cursor += 1
        text = turn.text
        if turn.recall:
            text += " " + " | ".join(m.content for m in messages if m.role == "user")
        # Lazily, as a model yields its first token before it has written the rest.
        for count, match in enumerate(_TOKEN.finditer(text)):
            token = match.group()
            if options.max_tokens is not None and count >= options.max_tokens:
                yield Finish("length")
                return
            yield token
            # Yield to the event loop between tokens, as a real engine's hand-off does: other
            # requests (cancel, ping) are served while a turn streams.
            await asyncio.sleep(turn.chunk_delay_seconds)
        if turn.fail_with is not None:
            raise BackendError(turn.fail_with)
        yield Finish("stop")
