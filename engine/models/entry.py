"""One model on disk: its name, where it is, what kind of files it is, and where it was found."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

ModelKind = Literal["gguf", "safetensors"]
ModelSource = Literal["embedded", "configured", "models folder", "ollama", "lmstudio", "hf"]

_SPLIT_RE = re.compile(r"^(?P<stem>.*)-(?P<part>\d{5})-of-(?P<total>\d{5})\.gguf$", re.IGNORECASE)


@dataclass(frozen=True)
class ModelEntry:
    """``name`` is what a ``model`` setting may say; names from the stores carry their source as
    a prefix (``ollama:``, ``lmstudio:``, ``hf:``) so that no two entries share one."""

    name: str
    path: Path
    kind: ModelKind
    source: ModelSource

    @property
    def size_bytes(self) -> int:
        """The bytes on disk (every part of a split GGUF; every shard of a safetensors folder)."""
        try:
            if self.kind == "safetensors":
                return sum(p.stat().st_size for p in self.path.glob("*.safetensors"))
            return sum(p.stat().st_size for p in gguf_parts(self.path))
        except OSError:
            return 0


def is_gguf_name(path: Path) -> bool:
    return path.suffix.lower() == ".gguf"


def kind_of(path: Path) -> ModelKind | None:
    """What a path is as a model, judged by its name and folder layout (nothing is read)."""
    if path.is_file() and is_gguf_name(path):
        return "gguf"
    if path.is_dir() and (path / "config.json").is_file() and any(path.glob("*.safetensors")):
        return "safetensors"
    return None


def split_part(path: Path) -> tuple[int, int] | None:
    """``(part, total)`` for one file of a split GGUF (``name-00001-of-00003.gguf``)."""
    match = _SPLIT_RE.match(path.name)
    return (int(match["part"]), int(match["total"])) if match else None


def gguf_parts(path: Path) -> list[Path]:
    """Every file of the GGUF model that starts at ``path`` (just ``path`` unless it is split)."""
    match = _SPLIT_RE.match(path.name)
    if match is None:
        return [path]
    stem, total = match["stem"], int(match["total"])
    return [path.with_name(f"{stem}-{n:05d}-of-{total:05d}.gguf") for n in range(1, total + 1)]


def is_listed_gguf(path: Path) -> bool:
    """Whether a ``.gguf`` file is listed as a model: not a vision projector, and only the first
    file of a split model."""
    if "mmproj" in path.name.lower():
        return False
    part = split_part(path)
    return part is None or part[0] == 1
