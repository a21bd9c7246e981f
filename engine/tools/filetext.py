"""A file's bytes as text the edit tools can change, and back, keeping what the file was.

A file keeps its encoding (UTF-8, or UTF-16/UTF-32 when it starts with their byte order mark),
its byte order mark, its line endings (a CRLF file stays CRLF: the tools work on ``\\n`` and the
CRLF is put back; a file that mixes both is left exactly as it is around the change) and its
permission bits. A binary file (a NUL byte in its first 8 KiB, with no UTF-16/32 mark), a file
that is not valid UTF-8, and anything over :data:`MAX_EDIT_BYTES` are refused with a message.
"""

from __future__ import annotations

import codecs
import os
import stat
from dataclasses import dataclass
from typing import Literal

from engine.edits import digest
from engine.tools.base import ToolError
from engine.tools.textfiles import is_binary
from engine.workspace_fs import WorkspaceFS

MAX_EDIT_BYTES = 4 * 1024 * 1024
"""The largest file the edit tools read or write."""

_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),  # before UTF-16 LE: it starts with the same two bytes
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)

Newlines = Literal["lf", "crlf", "mixed"]


@dataclass(frozen=True)
class TextFormat:
    """How a file's text is stored."""

    encoding: str = "utf-8"
    bom: bytes = b""
    newlines: Newlines = "lf"

    def to_internal(self, text: str) -> str:
        """Text written by the model or the user, with this file's line endings as ``\\n``."""
        return text if self.newlines == "mixed" else text.replace("\r\n", "\n")

    def to_disk(self, text: str, shown: str) -> bytes:
        """``text`` (as :meth:`to_internal` gives it) encoded the way this file is stored."""
        if self.newlines == "crlf":
            text = text.replace("\n", "\r\n")
        try:
            data = self.bom + text.encode(self.encoding)
        except UnicodeEncodeError as exc:
            raise ToolError(
                f"The new text of {shown} cannot be written in {self.encoding}: "
                f"{exc.reason} at character {exc.start}."
            ) from None
        if len(data) > MAX_EDIT_BYTES:
            raise ToolError(
                f"The new {shown} would be {len(data)} bytes long; the edit tools write files of "
                f"at most {MAX_EDIT_BYTES} bytes."
            )
        return data

    def describe(self) -> str:
        parts = [self.encoding.upper()]
        if self.bom:
            parts.append("with BOM")
        if self.newlines != "lf":
            parts.append({"crlf": "CRLF", "mixed": "mixed line endings"}[self.newlines])
        return ", ".join(parts)


@dataclass(frozen=True)
class FileText:
    """A file read for editing."""

    path: str
    """Relative to the workspace, every link resolved."""
    text: str
    """The content, with CRLF line endings as ``\\n`` (see :class:`TextFormat`)."""
    format: TextFormat
    digest: str
    """Of the bytes on disk (what the read ledger compares)."""
    mode: int
    """Permission bits (``st_mode & 0o7777``)."""

    @property
    def disk_text(self) -> str:
        """The text as stored (CRLF put back), without the byte order mark."""
        return self.text.replace("\n", "\r\n") if self.format.newlines == "crlf" else self.text


def sniff_encoding(data: bytes) -> tuple[str, bytes]:
    """A file's encoding and byte order mark: the mark's, else UTF-8 without one."""
    for mark, name in _BOMS:
        if data.startswith(mark):
            return name, mark
    return "utf-8", b""


def decode(data: bytes, shown: str) -> tuple[str, TextFormat]:
    """The text of a file's bytes and how it is stored; :class:`ToolError` when it is not text
    the edit tools can change without altering anything else."""
    encoding, bom = sniff_encoding(data)
    body = data[len(bom) :]
    if encoding == "utf-8" and is_binary(body):
        raise ToolError(
            f"{shown} looks like a binary file (it contains NUL bytes); "
            "the edit tools only change text files."
        )
    try:
        text = body.decode(encoding)
    except UnicodeDecodeError as exc:
        raise ToolError(
            f"{shown} is not valid {encoding.upper()} (byte {exc.start + len(bom)}); the edit "
            "tools only change UTF-8 files (or UTF-16/32 files with a byte order mark), so that "
            "nothing else in the file changes."
        ) from None
    crlf = text.count("\r\n") if "\r" in text else 0
    newlines: Newlines = "lf"
    if crlf and crlf == text.count("\n"):
        newlines = "crlf"
        text = text.replace("\r\n", "\n")
    elif crlf:
        newlines = "mixed"
    return text, TextFormat(encoding, bom, newlines)


def check_size(size: int, shown: str) -> None:
    if size > MAX_EDIT_BYTES:
        raise ToolError(
            f"{shown} is {size} bytes long; the edit tools change files of at most "
            f"{MAX_EDIT_BYTES} bytes. Use python or terminal for larger files."
        )


def read_fd_capped(fd: int, shown: str) -> bytes:
    """The whole file at ``fd`` (closed afterwards), refused when over :data:`MAX_EDIT_BYTES`."""
    try:
        with os.fdopen(fd, "rb") as handle:
            data = handle.read(MAX_EDIT_BYTES + 1)
    except OSError as exc:
        raise ToolError(f"Cannot read {shown}: {exc.strerror or exc}") from None
    check_size(len(data), shown)
    return data


def read_text(fs: WorkspaceFS, path: str) -> FileText:
    """An existing file of the workspace, opened by descriptor, as text to edit."""
    opened, info = fs.open_file(path)
    shown = opened.relative
    if info.st_size > MAX_EDIT_BYTES:
        os.close(opened.fd)
        check_size(info.st_size, shown)
    data = read_fd_capped(opened.fd, shown)
    text, fmt = decode(data, shown)
    return FileText(shown, text, fmt, digest(data), stat.S_IMODE(info.st_mode))
