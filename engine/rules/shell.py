"""What a terminal command line runs, as far as rules are concerned.

Two readers, and allowing needs both:

1. **tree-sitter-bash** (a maintained, complete bash grammar; MIT) parses the line into a tree. It
   finds every simple command wherever it is (inside ``$( )``, backquotes, ``<( )``, subshells,
   function bodies, ``if``/``while``, the string of ``sh -c``/``bash -c``/``eval``, after ``env``,
   ``sudo``, ``xargs``, ``find -exec``...): those are what deny and ask rules are matched against.
2. :mod:`engine.rules.words`, a small tokenizer of the plain subset of shell, says exactly which
   words each program will get when the line is plain.

A line can be allowed by rules only when it is **understood**: the tokenizer finds it plain,
tree-sitter parses it without error into nothing but plain commands joined by ``&&``, ``||``,
``;``, ``|`` and newlines, both find the same commands with the same words, and no command has a
shape that runs other code rules cannot see (:data:`ALWAYS_ASK`, :func:`shape_reasons`). Anything
else is *unclear*: rules can still deny it or ask about it, but never allow it. bashlex (GPL-3.0,
last release 2023) was not used: its licence does not fit this Apache-2.0 project, and it
raises on constructs such as ``case`` and arithmetic, where a tree with error nodes still lets
deny rules see the commands around them.
"""

from __future__ import annotations

import posixpath
import unicodedata
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import TYPE_CHECKING

from engine.rules.words import read_words

if TYPE_CHECKING:
    from tree_sitter import Node, Parser

Argv = tuple[str | None, ...]
"""A command's words as found in the tree; None for a word whose value depends on expansion."""


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


SHELLS = _names("sh bash zsh dash ksh mksh yash fish csh tcsh busybox ash rbash pwsh powershell")
EVALUATORS = _names(
    "eval exec source . command builtin alias unalias function declare typeset export "
    "readonly local set shopt trap enable hash unset ulimit umask coproc"
)
WRAPPERS = _names(
    "env sudo doas su pkexec runuser nohup nice ionice chrt taskset setsid stdbuf timeout "
    "time xargs parallel watch strace ltrace unbuffer flock chroot script nsenter unshare "
    "firejail bwrap systemd-run"
)
ALWAYS_ASK = SHELLS | EVALUATORS | WRAPPERS
"""Programs whose words are other code (a shell, a wrapped command, an evaluated string):
a command running one of these is never allowed by rules."""

_OPTION_SHAPES: dict[str, tuple[tuple[str, str], ...]] = {
    "find": tuple(
        (opt, "find -exec runs other commands")
        for opt in ("-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprint0", "-fprintf", "-fls")
    ),
    "git": tuple(
        (opt, "git configuration from the command line can run programs")
        for opt in (
            "-c",
            "--config-env",
            "--exec-path",
            "--upload-pack",
            "--receive-pack",
            "--exec=",
            "--template",
        )
    ),
}
"""Options that make an otherwise plain program run other code (prefix match on a word)."""

_PLAIN_NODES = frozenset({"program", "list", "pipeline", "command", "redirected_statement"})
_PLAIN_TOKENS = frozenset({"&&", "||", ";", "|", "\n"})
_REASONS = {
    "command_substitution": "runs a command substitution ($( ) or backquotes)",
    "process_substitution": "uses process substitution <( )",
    "subshell": "uses a subshell ( )",
    "heredoc_redirect": "uses a here-document",
    "herestring_redirect": "uses a here-string",
    "function_definition": "defines a function",
    "variable_assignment": "assigns a variable",
    "expansion": "expands a variable",
    "simple_expansion": "expands a variable",
    "arithmetic_expansion": "uses arithmetic expansion",
    "comment": "contains a comment",
    "negated_command": "uses ! (negation)",
}
_MAX_DEPTH = 4


def program_name(word: str) -> str:
    """How deny and ask rules compare a program: its base name, look-alikes folded."""
    return unicodedata.normalize("NFKC", posixpath.basename(word)).casefold()


@cache
def _parser() -> Parser:
    import tree_sitter_bash  # noqa: PLC0415 - loaded with the first terminal call
    from tree_sitter import Language, Parser  # noqa: PLC0415

    return Parser(Language(tree_sitter_bash.language()))


@dataclass(frozen=True)
class CommandAnalysis:
    """What rules see of one command line."""

    commands: tuple[tuple[str, ...], ...]
    """The simple commands of an understood line, their exact words, in order (empty when the
    line is unclear: then no allow rule applies)."""
    unclear: tuple[str, ...]
    """Why rules cannot allow the line (empty: understood)."""
    found: tuple[Argv, ...]
    """Every simple command found anywhere in the line (best effort), for deny and ask rules;
    a word whose value is not known is None."""

    @property
    def understood(self) -> bool:
        return not self.unclear


def shape_reasons(argv: tuple[str, ...]) -> list[str]:
    """Why a plain command still runs code rules cannot see (empty: none)."""
    program = posixpath.basename(argv[0])
    if program in SHELLS:
        return [f"starts a shell ({program}): its code is not visible to rules"]
    if program in EVALUATORS:
        return [f"uses {program}, which changes how commands run"]
    if program in WRAPPERS:
        return [f"runs another command through {program}"]
    for prefix, reason in _OPTION_SHAPES.get(program, ()):
        if any(word == prefix or word.startswith(prefix) for word in argv[1:]):
            return [reason]
    return []


def _word_value(node: Node, text: bytes) -> str | None:
    """The value bash gives a word node, when it does not depend on expansion."""
    kind = node.type
    raw = text[node.start_byte : node.end_byte].decode("utf-8", "surrogateescape")
    if kind in ("word", "number"):
        if any(c in raw for c in "*?[~{"):
            return None
        out, escaped = [], False
        for char in raw:
            if escaped:
                if char != "\n":
                    out.append(char)
                escaped = False
            elif char == "\\":
                escaped = True
            else:
                out.append(char)
        return "".join(out)
    if kind == "raw_string":
        return raw[1:-1]
    if kind == "string":
        if any(child.type != "string_content" for child in node.named_children):
            return None
        inner, out, i = raw[1:-1], [], 0
        while i < len(inner):
            if inner[i] == "\\" and i + 1 < len(inner) and inner[i + 1] in '$`"\\\n':
                if inner[i + 1] != "\n":
                    out.append(inner[i + 1])
                i += 2
            else:
                out.append(inner[i])
                i += 1
        return "".join(out)
    if kind == "concatenation":
        parts = [_word_value(child, text) for child in node.children]
        return None if any(p is None for p in parts) else "".join(p or "" for p in parts)
    if kind == "command_name":
        return _word_value(node.children[0], text) if node.children else None
    return None


def _command_argv(node: Node, text: bytes) -> Argv:
    words: list[str | None] = []
    for child in node.named_children:
        if child.type == "variable_assignment":
            continue  # leading NAME=value: not a word of the command
        if child.type in ("file_redirect", "heredoc_redirect", "herestring_redirect"):
            continue
        words.append(_word_value(child, text))
    return tuple(words)


class _Walk:
    def __init__(self) -> None:
        self.found: list[Argv] = []
        self.commands: list[tuple[str, ...] | None] = []
        self.unclear: list[str] = []

    def fail(self, reason: str) -> None:
        if reason not in self.unclear:
            self.unclear.append(reason)

    def tree(self, source: str, depth: int, top: bool) -> None:
        text = source.encode("utf-8", "surrogateescape")
        root = _parser().parse(text).root_node
        if root.has_error and top:
            self.fail("cannot be parsed as a whole by the shell grammar")
        self.node(root, text, depth, top)

    def node(self, node: Node, text: bytes, depth: int, plain: bool) -> None:
        kind = node.type
        if kind == "file_redirect":
            plain = False  # the tokenizer checks redirections (operators and targets)
        elif plain and node.is_named and kind not in _PLAIN_NODES:
            self.fail(_REASONS.get(kind, f"uses shell syntax rules do not allow ({kind})"))
            plain = False
        if plain and not node.is_named and kind not in _PLAIN_TOKENS:
            self.fail(f"uses the shell operator {kind!r}")
            plain = False
        if kind == "command":
            argv = _command_argv(node, text)
            self.found.append(argv)
            if plain:
                self.commands.append(None if None in argv else tuple(str(w) for w in argv))
            self.nested(argv, depth)
            plain = False  # its words are checked by the tokenizer and the comparison
        for child in node.children:
            self.node(child, text, depth, plain)

    def nested(self, argv: Argv, depth: int) -> None:
        """Parse the code a command runs from a string (sh -c, eval), for deny and ask rules."""
        if depth >= _MAX_DEPTH or not argv or argv[0] is None:
            return
        program = program_name(argv[0])
        code: str | None = None
        if program in SHELLS:
            for index, word in enumerate(argv[1:-1], start=1):
                if word is not None and word.startswith("-") and "c" in word.lstrip("-"):
                    code = argv[index + 1]
                    break
        elif program == "eval" and None not in argv[1:]:
            code = " ".join(str(w) for w in argv[1:])
        if code:
            self.tree(code, depth + 1, top=False)


@lru_cache(maxsize=512)
def analyse(command: str) -> CommandAnalysis:
    """What rules see of ``command`` (cached: a turn asks about the same line more than once)."""
    walk = _Walk()
    walk.tree(command, 0, top=True)
    reading = read_words(command)
    unclear = list(reading.unclear) + [r for r in walk.unclear if r not in reading.unclear]
    commands = tuple(tuple(c.argv) for c in reading.commands)
    if not unclear and tuple(walk.commands) != commands:
        unclear.append("is read differently by the two shell parsers")
    if not unclear:
        for argv in commands:
            unclear += [r for r in shape_reasons(argv) if r not in unclear]
    return CommandAnalysis(() if unclear else commands, tuple(unclear), tuple(walk.found))
