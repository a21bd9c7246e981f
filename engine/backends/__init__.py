"""Model backends. Each turns a conversation into a stream of raw text deltas."""

from engine.backends.base import (
    Backend,
    BackendError,
    Finish,
    GenerationOptions,
    Message,
    Notice,
    ToolSpec,
)

__all__ = [
    "Backend",
    "BackendError",
    "Finish",
    "GenerationOptions",
    "Message",
    "Notice",
    "ToolSpec",
]
