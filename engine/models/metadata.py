"""What a model's files say about it, read without loading it: name, parameter count,
quantisation, context length, whether it carries a chat template.

GGUF files are read by :mod:`engine.models.gguf`. A safetensors folder is described by its
``config.json`` (``max_position_embeddings``, ``torch_dtype``/``quantization_config``), its
tokenizer files (``chat_template`` in ``tokenizer_config.json``, or ``chat_template.jinja``) and
the JSON headers of its ``*.safetensors`` files (tensor shapes, hence the parameter count). A file
that cannot be read gives a :class:`ModelInfo` with ``error`` set, never an exception.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.models.entry import ModelEntry, gguf_parts
from engine.models.gguf import GgufError, read_gguf

MAX_JSON_BYTES = 4_000_000
MAX_SAFETENSORS_HEADER = 100_000_000
_CONTEXT_KEYS = ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length")


@dataclass(frozen=True)
class ModelInfo:
    """One entry with what its files say. ``None`` means "not known"."""

    entry: ModelEntry
    size_bytes: int
    architecture: str | None = None
    display_name: str | None = None
    parameters: int | None = None
    quantization: str | None = None
    context_length: int | None = None
    chat_template: bool | None = None
    error: str | None = None


def describe(entry: ModelEntry) -> ModelInfo:
    """The entry's metadata; problems end up in ``error``."""
    size = entry.size_bytes
    if entry.kind == "gguf":
        return _describe_gguf(entry, size)
    return _describe_folder(entry, size)


def _describe_gguf(entry: ModelEntry, size: int) -> ModelInfo:
    try:
        info = read_gguf(entry.path)
    except GgufError as exc:
        return ModelInfo(entry, size, error=str(exc))
    missing = [p.name for p in gguf_parts(entry.path) if not p.exists()]
    error = f"missing split part(s): {', '.join(missing)}" if missing else None
    return ModelInfo(
        entry,
        size,
        architecture=info.architecture,
        display_name=info.name,
        parameters=_split_total(entry.path, info.parameters),
        quantization=info.file_type,
        context_length=info.context_length,
        chat_template=info.chat_template,
        error=error,
    )


def _split_total(path: Path, first: int | None) -> int | None:
    """A split GGUF's parameters are spread over its parts: add up each part's tensors."""
    parts = gguf_parts(path)
    if len(parts) == 1 or first is None:
        return first
    total = first
    for part in parts[1:]:
        try:
            total += read_gguf(part).parameters or 0
        except GgufError:
            return None
    return total


def _json(path: Path) -> dict[str, Any] | None:
    try:
        if not path.is_file() or path.stat().st_size > MAX_JSON_BYTES:
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _describe_folder(entry: ModelEntry, size: int) -> ModelInfo:
    config = _json(entry.path / "config.json")
    if config is None:
        return ModelInfo(entry, size, error="config.json is missing or not valid JSON")
    text = config.get("text_config")
    sub: dict[str, Any] = text if isinstance(text, dict) else {}
    context = next(
        (v for k in _CONTEXT_KEYS for v in (config.get(k), sub.get(k)) if _positive(v)), None
    )
    quant = config.get("quantization_config")
    quantization = quant.get("quant_method") if isinstance(quant, dict) else None
    dtype = config.get("torch_dtype") or config.get("dtype")
    model_type = config.get("model_type")
    architectures = config.get("architectures")
    class_name = architectures[0] if isinstance(architectures, list) and architectures else None
    parameters, error = _safetensors_parameters(entry.path)
    return ModelInfo(
        entry,
        size,
        architecture=model_type if isinstance(model_type, str) else None,
        display_name=class_name if isinstance(class_name, str) else None,
        parameters=parameters,
        quantization=str(quantization or dtype) if (quantization or dtype) else None,
        context_length=int(context) if context is not None else None,
        chat_template=_has_chat_template(entry.path),
        error=error,
    )


def _positive(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _has_chat_template(folder: Path) -> bool:
    if (folder / "chat_template.jinja").is_file() or (folder / "chat_template.json").is_file():
        return True
    config = _json(folder / "tokenizer_config.json")
    return bool(config and config.get("chat_template"))


def _safetensors_parameters(folder: Path) -> tuple[int | None, str | None]:
    """Parameters counted from the tensor shapes in every shard's header."""
    total = 0
    for shard in sorted(folder.glob("*.safetensors")):
        try:
            with shard.open("rb") as file:
                head = file.read(8)
                if len(head) < 8:
                    return None, f"{shard.name}: truncated header"
                length = struct.unpack("<Q", head)[0]
                if length > min(MAX_SAFETENSORS_HEADER, shard.stat().st_size - 8):
                    return None, f"{shard.name}: corrupt header"
                header = json.loads(file.read(length))
        except (OSError, ValueError) as exc:
            return None, f"{shard.name}: {exc}"
        if not isinstance(header, dict):
            return None, f"{shard.name}: corrupt header"
        for name, tensor in header.items():
            shape = tensor.get("shape") if isinstance(tensor, dict) else None
            if name == "__metadata__" or not isinstance(shape, list):
                continue
            count = 1
            for dim in shape:
                count *= int(dim) if _positive(dim) or dim == 0 else 1
            total += count
    return total or None, None
