"""``agent/models`` (the models this machine has) and ``agent/pullModel`` (one fetched from the
Hugging Face Hub)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from engine.models.entry import ModelKind, ModelSource
from server.protocol.base import StrictParams, WireModel


class ModelsParams(StrictParams):
    """``agent/models`` params: none (``{}`` or omitted)."""


class ModelDescription(WireModel):
    """One model, with what its files say about it (null: not known)."""

    name: str = Field(description="What a model setting (or agent/chat model) may say.")
    source: ModelSource = Field(description="Where it was found.")
    kind: ModelKind = Field(description="gguf or safetensors.")
    path: str = Field(description="The file or folder.")
    size_bytes: int = Field(description="Bytes on disk (every part or shard).")
    architecture: str | None = Field(description="e.g. llama, qwen2.")
    display_name: str | None = Field(description="The name its metadata gives.")
    parameters: int | None = Field(description="Parameter count, from its tensors.")
    quantization: str | None = Field(description="e.g. Q4_K_M.")
    context_length: int | None = Field(description="The context it was trained for, in tokens.")
    chat_template: bool | None = Field(description="Whether it carries a chat template.")
    error: str | None = Field(description="Why it cannot be used (unreadable, truncated, ...).")


class ModelsResult(WireModel):
    """``agent/models`` result."""

    models: list[ModelDescription]
    current: str | None = Field(description="The loaded (or configured) model's name.")
    models_folder: str = Field(description="Where to put .gguf files or safetensors folders.")


class PullModelParams(StrictParams):
    """``agent/pullModel`` params: a repository, and optionally one file of it."""

    repo: str = Field(
        min_length=3, pattern=r"^[^/\s]+/[^/\s]+$", description="ORG/NAME on the Hub."
    )
    file: str | None = Field(
        default=None, min_length=1, description="One file (e.g. a .gguf); absent: the model."
    )
    revision: str = Field(default="main", min_length=1, description="A branch, tag or commit.")


class PullModelResult(WireModel):
    """``agent/pullModel`` result."""

    name: str = Field(description="The pulled model's name (usable as model).")
    repo: str
    revision: str
    files: list[str] = Field(description="The files on disk.")


class PullFailedData(WireModel):
    """``data`` of -32600 when a pull failed (network, checksum, no such repository)."""

    repo: str


class PullCancelledData(WireModel):
    """``data`` of -32600 when a pull was stopped."""

    reason: Literal["cancelled"] = "cancelled"
