"""Display safety: how model-written text is shown to a person.

A command, a piece of code, an answer or a tool's output can carry characters that change what a
person sees without being visible themselves: terminal escape sequences (``ESC[2K`` erases the
line), bidi overrides and isolates (``U+202E`` reverses the text after it), zero-width and other
invisible format characters. Every client shows such characters visibly instead: C0/C1 controls
and DEL as ``\\xNN`` (``ESC`` is ``\\x1b``), the others as ``<U+XXXX>``. Tabs and newlines stay;
``\\r\\n`` is shown as a newline, a lone ``\\r`` as ``\\x0d``.

The same rule is implemented by every client this repository ships (Python here, TypeScript in
``vscode-client/src/display.ts``, Lua in the Neovim plug-in); ``docs/schema/display-safety.json``
holds the code point ranges and the test strings all of them are tested against.
"""

from __future__ import annotations

import re

HIDDEN_RANGES: tuple[tuple[int, int], ...] = (
    (0x0000, 0x0008),  # C0 controls before TAB
    (0x000B, 0x000C),  # VT, FF
    (0x000E, 0x001F),  # the rest of C0 (CR is handled apart: CRLF is a line end), ESC included
    (0x007F, 0x009F),  # DEL and the C1 controls (CSI is U+009B)
    (0x00AD, 0x00AD),  # soft hyphen
    (0x034F, 0x034F),  # combining grapheme joiner
    (0x061C, 0x061C),  # Arabic letter mark (bidi)
    (0x115F, 0x1160),  # Hangul fillers
    (0x17B4, 0x17B5),  # Khmer inherent vowels (invisible)
    (0x180E, 0x180E),  # Mongolian vowel separator
    (0x200B, 0x200F),  # zero-width space, non-joiner, joiner; LRM, RLM
    (0x2028, 0x202E),  # line/paragraph separators; bidi embeddings and overrides
    (0x2060, 0x2064),  # word joiner, invisible operators
    (0x2066, 0x206F),  # bidi isolates; deprecated format characters
    (0x3164, 0x3164),  # Hangul filler
    (0xFEFF, 0xFEFF),  # zero-width no-break space (BOM)
    (0xFFA0, 0xFFA0),  # halfwidth Hangul filler
    (0xFFF9, 0xFFFB),  # interlinear annotation
    (0x1D173, 0x1D17A),  # musical format characters
    (0xE0000, 0xE007F),  # tag characters (invisible ASCII look-alikes)
)
"""Code points that are never shown raw (besides a ``\\r`` that does not end a line)."""


def _class_body() -> str:
    parts = []
    for low, high in HIDDEN_RANGES:
        first, last = re.escape(chr(low)), re.escape(chr(high))
        parts.append(first if low == high else f"{first}-{last}")
    return "".join(parts)


_HIDDEN = re.compile(f"\\r(?!\\n)|[{_class_body()}]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0x9F else f"<U+{code:04X}>"


def visible(text: str) -> str:
    """``text`` with every hidden or control character shown visibly (see the module docs)."""
    return _HIDDEN.sub(_escape, text).replace("\r\n", "\n")


def hidden_characters(text: str) -> list[str]:
    """The hidden characters in ``text``, each once, in order, as :func:`visible` shows them."""
    seen: dict[str, None] = {}
    for match in _HIDDEN.finditer(text):
        seen.setdefault(_escape(match), None)
    return list(seen)


def hidden_warning(text: str) -> str | None:
    """A sentence for an approval prompt when ``text`` hides characters, else None."""
    found = hidden_characters(text)
    if not found:
        return None
    shown = ", ".join(found[:8]) + (", ..." if len(found) > 8 else "")
    return (
        f"Warning: this contains hidden or control characters ({shown}); they are shown as "
        "escapes. Read it carefully."
    )
