"""The plain subset of shell a rule may allow, read by a deliberately small tokenizer.

A command line is *plain* when it is simple commands joined by ``&&``, ``||``, ``;``, ``|`` and
newlines, whose words are made of

- unquoted characters from :data:`SAFE` (letters, digits, ``_ @ % + = : , . / -``),
- single-quoted text (anything printable but ``'``),
- double-quoted text without ``$``, a backquote or a backslash (so nothing is expanded in it),

with redirections only to plain files inside the workspace (or ``/dev/null``, or ``2>&1``). For a
plain line the words bash will pass to each program are exactly the words read here: there is no
expansion, no globbing, no escape and no keyword left to interpret. Anything else (``$``,
backquotes, ``\\``, globs, ``~``, braces, parentheses, ``&``, here-documents, comments, keywords,
a leading ``NAME=value``, a character outside printable ASCII outside quotes, a hidden character
anywhere, an unterminated quote) makes the line not plain, with a reason a person can read.

This is the authority for *allowing*: :mod:`engine.rules.shell` also parses the line with a real
shell grammar and allows only when both agree (see there). It is also the syntax of a terminal
rule's pattern (plus a final unquoted ``*``).
"""

from __future__ import annotations

import posixpath
import string
import unicodedata
from dataclasses import dataclass, field

from sandbox.autorun import AUTORUN_NAMES

SAFE = frozenset(string.ascii_letters + string.digits + "_@%+=:,./-")
"""Characters a word may hold outside quotes."""


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


KEYWORDS = _names(
    "if then else elif fi case esac for select while until do done in function time coproc ! "
    "[[ ]] { }"
)
"""Words that are not a program name in command position."""

_UNQUOTED_REASONS = {
    "$": "expands a variable or a command ($)",
    "`": "runs a command inside backquotes",
    "\\": "uses a backslash escape or line continuation",
    "*": "uses a glob (its words depend on the files present)",
    "?": "uses a glob (its words depend on the files present)",
    "[": "uses a glob or a test ([)",
    "]": "uses a glob or a test (])",
    "~": "uses ~ expansion",
    "{": "uses braces (a group or a brace expansion)",
    "}": "uses braces (a group or a brace expansion)",
    "(": "uses a subshell or a function definition",
    ")": "uses a subshell or a function definition",
    "#": "contains a comment",
    "!": "uses ! (negation or history)",
    "^": "uses ^",
}


@dataclass
class Redirect:
    operator: str
    target: str


@dataclass
class Words:
    """One simple command of a plain line."""

    argv: list[str] = field(default_factory=list)
    redirects: list[Redirect] = field(default_factory=list)


@dataclass
class Reading:
    """What the tokenizer read: the simple commands in order, or why the line is not plain."""

    commands: list[Words]
    unclear: list[str]
    operators: list[str]
    """The operators between commands, in order (``&&``, ``||``, ``;``, ``|``, newline)."""

    @property
    def plain(self) -> bool:
        return not self.unclear


def hidden(char: str) -> bool:
    """A character a person cannot see for what it is (controls, format characters)."""
    if char in "\t\n":
        return False
    return unicodedata.category(char) in ("Cc", "Cf", "Co", "Cs", "Zl", "Zp") or char == "\x7f"


class _Reader:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.unclear: list[str] = []

    def fail(self, reason: str) -> None:
        if reason not in self.unclear:
            self.unclear.append(reason)

    def peek(self, offset: int = 0) -> str:
        index = self.pos + offset
        return self.text[index] if index < len(self.text) else ""

    def word(self) -> str | None:
        """The word starting here (None: no word here); stops at whitespace or an operator."""
        parts: list[str] = []
        started = False
        while self.pos < len(self.text):
            char = self.text[self.pos]
            if char in " \t\n;&|<>":
                break
            started = True
            if char == "'":
                end = self.text.find("'", self.pos + 1)
                if end < 0:
                    self.fail("has an unterminated quote")
                    self.pos = len(self.text)
                    return None
                parts.append(self.text[self.pos + 1 : end])
                self.pos = end + 1
            elif char == '"':
                self.pos += 1
                while self.pos < len(self.text) and self.text[self.pos] != '"':
                    inner = self.text[self.pos]
                    if inner in "$`\\":
                        self.fail('expands something inside double quotes ($, ` or \\ in "...")')
                    parts.append(inner)
                    self.pos += 1
                if self.pos >= len(self.text):
                    self.fail("has an unterminated quote")
                    return None
                self.pos += 1
            else:
                if char not in SAFE:
                    if char in _UNQUOTED_REASONS:
                        self.fail(_UNQUOTED_REASONS[char])
                    elif not char.isascii():
                        self.fail("has a non-ASCII character outside quotes")
                    else:
                        self.fail(f"uses {char!r} outside quotes")
                parts.append(char)
                self.pos += 1
        return "".join(parts) if started else None

    def skip_blanks(self) -> None:
        while self.peek() in (" ", "\t") and self.peek() != "":
            self.pos += 1


def _redirect_operator(reader: _Reader, fd: str) -> str | None:
    """Read a redirection operator at the reader's position (after an optional fd)."""
    text = reader.text[reader.pos : reader.pos + 3]
    for op, reason in (
        ("<<<", "uses a here-string (<<<)"),
        ("<<", "uses a here-document (<<)"),
        ("<(", "uses process substitution <( )"),
        (">(", "uses process substitution >( )"),
        ("<>", "opens a file for reading and writing (<>)"),
        ("<&", "duplicates a file descriptor (<&)"),
    ):
        if text.startswith(op):
            reader.fail(reason)
            reader.pos += len(op)
            return None
    for op in (">>", ">|", ">&", ">", "<"):
        if text.startswith(op):
            reader.pos += len(op)
            return fd + op
    return None


def _check_target(reader: _Reader, operator: str, target: str | None) -> None:
    fd = operator.rstrip("<>|&") if not operator.startswith("&") else ""
    if fd not in ("", "1", "2"):
        reader.fail("redirects a file descriptor other than 1 or 2")
    if not target:
        reader.fail("has a redirection without a file")
        return
    if operator.endswith(">&"):
        if target not in ("1", "2"):
            reader.fail("duplicates a file descriptor other than 1 or 2")
        return
    if target == "/dev/null":
        return
    normal = posixpath.normpath(target)
    if target.startswith("/") or normal == ".." or normal.startswith("../"):
        reader.fail("redirects to a file outside the workspace")
    elif any(part in AUTORUN_NAMES for part in normal.split("/")):
        reader.fail("redirects into an auto-run path")


def read_words(text: str) -> Reading:
    """Tokenize ``text`` as described in the module docs."""
    reader = _Reader(text)
    for char in text:
        if hidden(char):
            reader.fail("contains hidden or control characters")
            break
    commands: list[Words] = []
    operators: list[str] = []
    current = Words()

    def end_command(operator: str | None) -> None:
        nonlocal current
        if current.argv or current.redirects:
            if not current.argv:
                reader.fail("has a redirection without a command")
            commands.append(current)
            current = Words()
            if operator is not None:
                operators.append(operator)
        elif operator is not None and operator != "\n":
            reader.fail(f"has {operator} without a command before it")

    while reader.pos < len(text):
        reader.skip_blanks()
        char = reader.peek()
        if char == "":
            break
        if char == "\n":
            reader.pos += 1
            end_command("\n")
        elif char == ";":
            if reader.peek(1) == ";":
                reader.fail("uses ;;")
            reader.pos += 1
            end_command(";")
        elif char == "&":
            nxt = reader.peek(1)
            if nxt == "&":
                reader.pos += 2
                end_command("&&")
            elif nxt == ">":
                reader.pos += 1
                op = _redirect_operator(reader, "&")
                reader.skip_blanks()
                target = reader.word()
                if op is not None:
                    _check_target(reader, op, target)
                    current.redirects.append(Redirect(op, target or ""))
            else:
                reader.fail("runs something in the background (&)")
                reader.pos += 1
        elif char == "|":
            nxt = reader.peek(1)
            if nxt == "|":
                reader.pos += 2
                end_command("||")
            elif nxt == "&":
                reader.fail("pipes standard error too (|&)")
                reader.pos += 2
            else:
                reader.pos += 1
                end_command("|")
        elif char in "<>":
            op = _redirect_operator(reader, "")
            reader.skip_blanks()
            target = reader.word() if op is not None else None
            if op is not None:
                _check_target(reader, op, target)
                current.redirects.append(Redirect(op, target or ""))
        else:
            start = reader.pos
            word = reader.word()
            if word is None:
                continue
            if (
                reader.peek() in ("<", ">")
                and word.isdigit()
                and text[start : reader.pos].isdigit()
            ):
                op = _redirect_operator(reader, word)
                reader.skip_blanks()
                target = reader.word() if op is not None else None
                if op is not None:
                    _check_target(reader, op, target)
                    current.redirects.append(Redirect(op, target or ""))
                continue
            if not current.argv:
                raw = text[start : reader.pos]
                if "=" in raw.split("/")[0] and not raw.startswith(("'", '"', "=")):
                    reader.fail("sets a variable before the command (NAME=value)")
                if raw in KEYWORDS:
                    reader.fail(f"uses the shell keyword {raw!r}")
            current.argv.append(word)
    end_command(None)
    if operators and len(operators) >= len(commands):
        if operators[-1] in ("&&", "||", "|"):
            reader.fail(f"ends with {operators[-1]}")
        operators.pop()  # a trailing ; or newline ends the line
    if not commands and not reader.unclear:
        reader.fail("is empty")
    return Reading(commands, reader.unclear, operators)


def quote(word: str) -> str:
    """``word`` written so that :func:`read_words` reads it back unchanged."""
    if word and all(c in SAFE for c in word) and "=" not in word[:1]:
        return word
    if "'" not in word:
        return f"'{word}'"
    if not any(c in word for c in '$`\\"'):
        return f'"{word}"'
    return "'" + word.replace("'", "'\"'\"'") + "'"


def join(argv: list[str] | tuple[str, ...]) -> str:
    return " ".join(quote(word) for word in argv)
