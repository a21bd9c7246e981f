"""What the read-only tools share: which folders they skip, reading a descriptor with a cap, and
telling a binary file from a text file."""

from __future__ import annotations

import os

from engine.tools.base import ToolError

BINARY_SNIFF_BYTES = 8 * 1024  # a NUL byte in the first this-many bytes makes a file binary

SKIPPED_DIRS: frozenset[str] = frozenset(
    {".git", "node_modules", "__pycache__", ".venv", ".mypy_cache", ".ruff_cache", ".pytest_cache"}
)
"""Names that ``list_files`` and ``search_files`` never descend into or show."""


def read_fd(fd: int, limit: int, shown: str) -> bytes:
    """Read at most ``limit`` bytes from ``fd`` and close it."""
    try:
        with os.fdopen(fd, "rb") as handle:
            return handle.read(limit)
    except OSError as exc:
        raise ToolError(f"Cannot read {shown}: {exc.strerror or exc}") from None


def is_binary(data: bytes) -> bool:
    return b"\x00" in data[:BINARY_SNIFF_BYTES]
