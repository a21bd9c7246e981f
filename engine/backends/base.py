"""The backend seam: one interface for the scripted model and every real engine.

A backend streams the model's *raw* output (tool-call markup included) as text deltas and ends with
one :class:`Finish`. Parsing, gating and tools are the loop's job, so every backend goes through
exactly the same path. Backends that block (llama.cpp, transformers) generate in an executor of
their own and hand deltas to the event loop thread-safely; cancelling the consuming task must stop
generation.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

Role = Literal["system", "user", "assistant", "tool"]


class BackendError(Exception):
    """A backend cannot be created or cannot generate (bad script, missing model file...)."""


@dataclass(frozen=True)
class Message:
    role: Role
    content: str
    name: str | None = None
    tool_call_id: str | None = None
    status: str | None = None
    """A tool result's outcome (``completed``, ``failed``, ``denied``, ...); None: not known."""


@dataclass(frozen=True)
class ToolSpec:
    """What a model is told about one tool."""

    name: str
    description: str
    parameters: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class GenerationOptions:
    max_tokens: int | None = None
    temperature: float | None = None
    seed: int | None = None


@dataclass(frozen=True)
class Notice:
    """Something the user should know about this model turn (e.g. old turns were dropped to fit
    the context window). The loop passes it on as a ``status`` event; the model never sees it."""

    text: str


@dataclass(frozen=True)
class Finish:
    """The end of one model turn: ``stop`` (the model ended) or ``length`` (``max_tokens``)."""

    reason: Literal["stop", "length"]


class Backend(ABC):
    """A model engine."""

    name: str
    model: str
    one_at_a_time: bool = False
    """True for a model that generates one stream at a time (a local model): the server queues
    the model turns of all sessions for it (:mod:`server.model_queue`)."""

    @abstractmethod
    def stream(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        options: GenerationOptions,
    ) -> AsyncGenerator[str | Notice | Finish, None]:
        """Stream one model turn: text deltas (and notices), then exactly one :class:`Finish`."""

    async def load(self, progress: Callable[[str], None] | None = None) -> None:  # noqa: B027
        """Load the model now (reporting progress text); by default it loads on first use."""

    async def close(self) -> None:  # noqa: B027 - optional hook, most backends hold nothing
        """Release what the backend holds (model memory, connections)."""
