"""A rule: ``{action: allow | ask | deny, tool, pattern?}``, where it came from, and what its
pattern means for its tool.

Patterns, by the kind of tool:

- ``terminal``: a command, written as it would be typed; its words are a prefix of the argument
  vector, and a final unquoted ``*`` stands for any further words (none included). ``pytest *``
  matches ``pytest`` and ``pytest -q tests``; ``git status`` matches only ``git status``. It is
  matched on the parsed command, never on the raw string (see :mod:`engine.rules.matching`).
- ``python``: the exact code (or no pattern: every call).
- every other tool (the read-only tools; the edit tools): a path glob relative to the workspace,
  ``*`` within one folder, ``**`` across folders (``src/**``, ``*.md``, ``docs/*.txt``).

No pattern means every call of the tool. A pattern that cannot mean anything (a terminal pattern
with shell operators, a path escaping the workspace) is an error where the rule is given.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal

from engine.rules.kinds import ACTIONS, SOURCES, RuleAction, RuleSource
from engine.rules.words import join, read_words

__all__ = ["ACTIONS", "SOURCES", "Rule", "RuleAction", "RuleError", "RuleSource"]

PatternKind = Literal["command", "code", "path"]


class RuleError(ValueError):
    """A rule that cannot be used, and why (a sentence a person can act on)."""


def pattern_kind(tool: str) -> PatternKind:
    if tool == "terminal":
        return "command"
    if tool == "python":
        return "code"
    return "path"


@dataclass(frozen=True)
class CommandPattern:
    words: tuple[str, ...]
    open_ended: bool
    """A final ``*``: any further words."""

    def text(self) -> str:
        return join(self.words) + (" *" if self.open_ended else "") if self.words else "*"


def parse_command_pattern(pattern: str) -> CommandPattern:
    stripped = pattern.strip()
    open_ended = stripped == "*" or stripped.endswith((" *", "\t*"))
    body = stripped[:-1].rstrip() if open_ended else stripped
    if not body:
        if open_ended:
            return CommandPattern((), True)
        raise RuleError("a terminal pattern needs at least a program name, or * for any command")
    reading = read_words(body)
    if reading.unclear or len(reading.commands) != 1 or reading.commands[0].redirects:
        why = "; ".join(reading.unclear) or "it is more than one command"
        raise RuleError(f"a terminal pattern is one plain command with an optional final * ({why})")
    return CommandPattern(tuple(reading.commands[0].argv), open_ended)


def _glob_regex(glob: str) -> re.Pattern[str]:
    out, i = [], 0
    while i < len(glob):
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif glob[i] == "*":
            out.append("[^/]*")
            i += 1
        elif glob[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(glob[i]))
            i += 1
    return re.compile("".join(out), re.DOTALL)


def normal_path(path: str | None) -> str | None:
    """A workspace-relative path in one spelling (``.`` for the root); None when it is outside
    the workspace (absolute, or climbing out with ``..``)."""
    if path is None or path == "":
        return "."
    if path.startswith("/") or "\\" in path or "\0" in path:
        return None
    normal = posixpath.normpath(path)
    if normal == ".." or normal.startswith("../"):
        return None
    return normal


def parse_path_pattern(pattern: str) -> re.Pattern[str]:
    normal = normal_path(pattern.strip())
    if normal is None or not pattern.strip():
        raise RuleError("a path pattern is a glob relative to the workspace (e.g. src/**)")
    return _glob_regex(normal)


@dataclass(frozen=True)
class Rule:
    """One rule and where it came from."""

    action: RuleAction
    tool: str
    pattern: str | None = None
    source: RuleSource = "user"
    scope: str | None = None
    """User rules: the workspace folder they apply in (None: every workspace)."""
    where: str | None = field(default=None, compare=False)
    """Where it is written (a file and rule number), for people."""
    approved_sha256: str | None = field(default=None, compare=False)
    """A rule made from an approval: the SHA-256 of the call that was approved."""
    created: str | None = field(default=None, compare=False)
    session_id: str | None = None
    """Session grants: the conversation it belongs to (part of its id)."""

    def __post_init__(self) -> None:
        if self.action not in ACTIONS:
            raise RuleError(f"the action must be allow, ask or deny, not {self.action!r}")
        if not self.tool:
            raise RuleError("a rule names a tool")
        if self.pattern is not None:
            self.compiled  # noqa: B018 - validate now, where the rule is given
        elif self.tool == "terminal":
            raise RuleError("a terminal rule needs a pattern (* for any command)")

    @cached_property
    def compiled(self) -> CommandPattern | re.Pattern[str] | str | None:
        if self.pattern is None:
            return None
        kind = pattern_kind(self.tool)
        if kind == "command":
            return parse_command_pattern(self.pattern)
        if kind == "code":
            return self.pattern
        return parse_path_pattern(self.pattern)

    @property
    def id(self) -> str:
        """Stable across restarts: the same rule from the same place has the same id."""
        key = "\0".join(
            [self.source, self.action, self.tool, self.pattern or "", self.scope or ""]
            + ([self.session_id or ""] if self.source == "session" else [])
        )
        return f"{self.source[0]}-{hashlib.sha256(key.encode()).hexdigest()[:12]}"

    def shown_pattern(self) -> str:
        """The pattern as a person reads it (a long code pattern is described, not shown)."""
        if self.pattern is None:
            return "every call"
        if pattern_kind(self.tool) == "code":
            lines = self.pattern.count("\n") + 1
            return "this exact code" if lines > 1 or len(self.pattern) > 60 else self.pattern
        compiled = self.compiled
        return compiled.text() if isinstance(compiled, CommandPattern) else self.pattern

    def describe(self) -> str:
        """e.g. ``terminal `pytest *```."""
        return f"{self.tool} `{self.shown_pattern()}`"
