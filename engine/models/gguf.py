"""What a GGUF file says about itself, read from its header without loading a tensor.

A GGUF file starts with ``GGUF``, a version (1-3), the tensor and key-value counts, the key-value
metadata and then one info record per tensor (name, shape, type, offset); the weights follow.
:func:`read_gguf` reads the metadata and the tensor records in bounded steps: every count and
length is checked against what is left of the file before anything is read or skipped, so a
truncated or corrupt file is a :class:`GgufError` with a clear message, never a crash or a
runaway allocation. Large values (the vocabulary, the merges, the chat template) are skipped,
not read.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

MAGIC = b"GGUF"
MAX_KEY_BYTES = 65_536
MAX_KEPT_STRING_BYTES = 4_096
"""Longer string values are skipped (their presence is still known)."""
MAX_ITEMS = 1 << 24
"""No count (keys, tensors, array items, dimensions) in a sane header is larger."""

# Value types: (struct format, size) for the fixed-size ones.
_FIXED: dict[int, tuple[str, int]] = {
    0: ("B", 1),  # uint8
    1: ("b", 1),  # int8
    2: ("H", 2),  # uint16
    3: ("h", 2),  # int16
    4: ("I", 4),  # uint32
    5: ("i", 4),  # int32
    6: ("f", 4),  # float32
    7: ("?", 1),  # bool
    10: ("Q", 8),  # uint64
    11: ("q", 8),  # int64
    12: ("d", 8),  # float64
}
_STRING, _ARRAY = 8, 9

FILE_TYPES: dict[int, str] = {
    0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1", 10: "Q2_K",
    11: "Q3_K_S", 12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M", 16: "Q5_K_S",
    17: "Q5_K_M", 18: "Q6_K", 19: "IQ2_XXS", 20: "IQ2_XS", 21: "Q2_K_S", 22: "IQ3_XS",
    23: "IQ3_XXS", 24: "IQ1_S", 25: "IQ4_NL", 26: "IQ3_S", 27: "IQ3_M", 28: "IQ2_S", 29: "IQ2_M",
    30: "IQ4_XS", 31: "IQ1_M", 32: "BF16", 36: "TQ1_0", 37: "TQ2_0", 38: "MXFP4_MOE",
}  # fmt: skip
"""``general.file_type`` (llama.cpp's ``llama_ftype``) to the usual quantisation name."""

TENSOR_TYPES: dict[int, str] = {
    0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 6: "Q5_0", 7: "Q5_1", 8: "Q8_0", 9: "Q8_1",
    10: "Q2_K", 11: "Q3_K", 12: "Q4_K", 13: "Q5_K", 14: "Q6_K", 15: "Q8_K", 16: "IQ2_XXS",
    17: "IQ2_XS", 18: "IQ3_XXS", 19: "IQ1_S", 20: "IQ4_NL", 21: "IQ3_S", 22: "IQ2_S",
    23: "IQ4_XS", 29: "IQ1_M", 30: "BF16", 34: "TQ1_0", 35: "TQ2_0", 39: "MXFP4",
}  # fmt: skip
"""ggml tensor types, for files without ``general.file_type``: the most common one is shown."""


class GgufError(ValueError):
    """The file is not a readable GGUF model (wrong magic, truncated, corrupt)."""


@dataclass(frozen=True)
class GgufInfo:
    """The facts Gatehouse shows and decides on. ``None``: the file does not say."""

    version: int
    architecture: str | None
    name: str | None
    file_type: str | None
    context_length: int | None
    chat_template: bool
    parameters: int | None
    size_label: str | None
    kind: str | None
    """``general.type``: ``model``, or ``mmproj``/``adapter`` for files that are not a model."""


class _Reader:
    """Little-endian reads that never go past the end of the file."""

    def __init__(self, file: BinaryIO, size: int, wide: bool) -> None:
        self._file = file
        self._size = size
        self._wide = wide  # version >= 2: counts and lengths are 64-bit
        self.pos = file.tell()

    def _need(self, count: int, what: str) -> None:
        if count < 0 or self.pos + count > self._size:
            raise GgufError(f"truncated header (reading {what} at byte {self.pos})")

    def read(self, count: int, what: str) -> bytes:
        self._need(count, what)
        data = self._file.read(count)
        if len(data) != count:
            raise GgufError(f"truncated header (reading {what} at byte {self.pos})")
        self.pos += count
        return data

    def skip(self, count: int, what: str) -> None:
        self._need(count, what)
        self._file.seek(count, 1)
        self.pos += count

    def fixed(self, value_type: int, what: str) -> Any:
        fmt, size = _FIXED[value_type]
        return struct.unpack("<" + fmt, self.read(size, what))[0]

    def count(self, what: str, limit: int = MAX_ITEMS) -> int:
        value = int(self.fixed(10 if self._wide else 4, what))
        if value > limit:
            raise GgufError(f"{what} is implausible ({value}): corrupt header")
        return value

    def string(self, what: str, keep: int = MAX_KEPT_STRING_BYTES) -> str | None:
        """A string; ``None`` (skipped) when longer than ``keep`` bytes."""
        length = self.count(f"the length of {what}", limit=self._size)
        if length > keep:
            self.skip(length, what)
            return None
        return self.read(length, what).decode("utf-8", "replace")

    def value(self, value_type: int, what: str) -> Any:
        """A value; arrays and long strings are skipped (returned as ``None``)."""
        if value_type in _FIXED:
            return self.fixed(value_type, what)
        if value_type == _STRING:
            return self.string(what)
        if value_type == _ARRAY:
            item_type = int(self.fixed(4, f"the item type of {what}"))
            items = self.count(f"the length of {what}")
            if item_type in _FIXED:
                self.skip(items * _FIXED[item_type][1], what)
            elif item_type == _STRING:
                for _ in range(items):
                    self.skip(self.count(f"a string in {what}", limit=self._size), what)
            else:
                raise GgufError(f"unsupported array item type {item_type} in {what}")
            return None
        raise GgufError(f"unknown value type {value_type} for {what}")


def read_gguf(path: Path) -> GgufInfo:
    """Read ``path``'s header. Raises :class:`GgufError` (also for I/O errors)."""
    try:
        with path.open("rb") as file:
            size = path.stat().st_size
            return _read(file, size)
    except OSError as exc:
        raise GgufError(f"cannot read {path}: {exc.strerror or exc}") from None
    except (struct.error, UnicodeError, OverflowError, MemoryError) as exc:
        raise GgufError(f"corrupt header ({exc})") from None


def _read(file: BinaryIO, size: int) -> GgufInfo:
    head = file.read(8)
    if len(head) < 8 or head[:4] != MAGIC:
        raise GgufError("not a GGUF file (no GGUF magic)")
    version = struct.unpack("<I", head[4:])[0]
    if version not in (1, 2, 3):
        if struct.unpack(">I", head[4:])[0] in (1, 2, 3):
            raise GgufError("a big-endian GGUF file: not supported")
        raise GgufError(f"unsupported GGUF version {version}")
    reader = _Reader(file, size, wide=version >= 2)
    tensors = reader.count("the tensor count")
    keys = reader.count("the key count")
    meta: dict[str, Any] = {}
    present: set[str] = set()
    for _ in range(keys):
        key = reader.string("a key", keep=MAX_KEY_BYTES)
        if key is None:
            raise GgufError("a key longer than 64 KB: corrupt header")
        value_type = int(reader.fixed(4, f"the type of {key}"))
        meta[key] = reader.value(value_type, key)
        present.add(key)
    counts: dict[str, int] = {}
    parameters = 0
    for _ in range(tensors):
        reader.string("a tensor name", keep=0)
        dims = int(reader.fixed(4, "a tensor's dimension count"))
        if dims > 8:
            raise GgufError(f"implausible dimension count ({dims}): corrupt header")
        elements = 1
        for _ in range(dims):
            elements *= int(reader.fixed(10 if version >= 2 else 4, "a tensor dimension"))
        tensor_type = TENSOR_TYPES.get(int(reader.fixed(4, "a tensor type")), "?")
        reader.skip(8, "a tensor offset")
        parameters += elements
        counts[tensor_type] = counts.get(tensor_type, 0) + elements
    return _info(version, meta, present, parameters if tensors else None, counts)


def _info(
    version: int,
    meta: dict[str, Any],
    present: set[str],
    parameters: int | None,
    counts: dict[str, int],
) -> GgufInfo:
    def text(key: str) -> str | None:
        value = meta.get(key)
        return value if isinstance(value, str) and value else None

    def number(key: str, least: int = 1) -> int | None:
        value = meta.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value >= least:
            return value
        return None

    architecture = text("general.architecture")
    file_type = number("general.file_type", least=0)
    quant = FILE_TYPES.get(file_type, f"type {file_type}") if file_type is not None else None
    if quant is None and counts:
        quant = max(counts, key=lambda name: counts[name])
    return GgufInfo(
        version=version,
        architecture=architecture,
        name=text("general.name"),
        file_type=quant,
        context_length=number(f"{architecture}.context_length") if architecture else None,
        chat_template="tokenizer.chat_template" in present,
        parameters=parameters,
        size_label=text("general.size_label"),
        kind=text("general.type"),
    )
