"""Which rules match a call: deny and ask rules match broadly, allow rules narrowly.

- **deny / ask** match if *any* command found anywhere in the line matches (inside ``$( )``,
  ``sh -c '...'``, after ``env``/``sudo``/``xargs``/``find -exec``...), comparing the program by
  its base name with look-alike characters folded (``/usr/bin/curl`` and a full-width ``curl``
  are ``curl``).
  For a path tool: if any path the call touches matches.
- **allow** matches only an understood line (:attr:`CommandAnalysis.understood`) in which
  *every* simple command matches an allow rule word for word, the program spelled exactly as in
  the rule (``/usr/bin/pytest`` is not ``pytest``). For a path tool: every path it touches is
  known, inside the workspace, and matches. For ``python``: the exact code.

Rules are indexed by tool and program name, so matching costs the same for 5 rules or 500
(see ``benchmarks/rule_matching.py``).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from engine.rules.model import CommandPattern, Rule, RuleAction, pattern_kind
from engine.rules.shell import WRAPPERS, Argv, CommandAnalysis, analyse, program_name

_SEARCH_INSIDE = WRAPPERS | {"find", "command", "builtin", "exec"}
"""Programs after which a deny or ask rule looks for its program among the later words."""


@dataclass(frozen=True)
class CallSubject:
    """What rules look at in one call."""

    tool: str
    command: CommandAnalysis | None = None
    code: str | None = None
    paths: tuple[str | None, ...] | None = None
    """Path tools: the workspace-relative paths it touches (None: outside the workspace);
    None when the tool's paths cannot be told from its arguments."""


def subject_for(tool: str, arguments: dict[str, object]) -> CallSubject:
    """The subject of a call of ``tool`` with (validated) ``arguments``."""
    from engine.rules.model import normal_path  # noqa: PLC0415

    kind = pattern_kind(tool)
    if kind == "command":
        command = arguments.get("command")
        return CallSubject(tool, command=analyse(command) if isinstance(command, str) else None)
    if kind == "code":
        code = arguments.get("code")
        return CallSubject(tool, code=code if isinstance(code, str) else None)
    if "path" in arguments or tool in ("list_files", "search_files"):
        path = arguments.get("path")
        if path is None or isinstance(path, str):
            return CallSubject(tool, paths=(normal_path(path),))
    return CallSubject(tool, paths=None)


def _words_match(words: tuple[str, ...], open_ended: bool, argv: Sequence[str | None]) -> bool:
    if len(argv) < len(words) or (not open_ended and len(argv) != len(words)):
        return False
    return all(w == a for w, a in zip(words, argv, strict=False))


def _broad_match(pattern: CommandPattern, argv: Argv) -> bool:
    if not pattern.words:
        return True
    head, rest = program_name(pattern.words[0]), pattern.words[1:]
    starts = [0]
    if argv and argv[0] is not None and program_name(argv[0]) in _SEARCH_INSIDE:
        starts = list(range(len(argv)))
    for start in starts:
        word = argv[start] if start < len(argv) else None
        if word is None or program_name(word) != head:
            continue
        if _words_match(rest, pattern.open_ended, argv[start + 1 :]):
            return True
    return False


@dataclass(frozen=True)
class Matches:
    """The rules that match one call."""

    deny: tuple[Rule, ...]
    ask: tuple[Rule, ...]
    allow: tuple[Rule, ...] | None
    """The allow rules that together allow the call (one per simple command), or None."""


class RuleIndex:
    """Rules indexed for matching."""

    def __init__(self, rules: Iterable[Rule]) -> None:
        self.rules: tuple[Rule, ...] = tuple(rules)
        self._any: dict[tuple[str, RuleAction], list[Rule]] = defaultdict(list)
        self._patterned: dict[tuple[str, RuleAction], list[Rule]] = defaultdict(list)
        self._allow_by_program: dict[str, list[Rule]] = defaultdict(list)
        self._broad_by_program: dict[tuple[RuleAction, str], list[Rule]] = defaultdict(list)
        for rule in self.rules:
            compiled = rule.compiled
            if compiled is None or (isinstance(compiled, CommandPattern) and not compiled.words):
                self._any[(rule.tool, rule.action)].append(rule)
            elif isinstance(compiled, CommandPattern):
                if rule.action == "allow":
                    self._allow_by_program[compiled.words[0]].append(rule)
                else:
                    key = (rule.action, program_name(compiled.words[0]))
                    self._broad_by_program[key].append(rule)
            else:
                self._patterned[(rule.tool, rule.action)].append(rule)

    def match(self, subject: CallSubject) -> Matches:
        return Matches(
            self._hits(subject, "deny"), self._hits(subject, "ask"), self._allowed(subject)
        )

    def _hits(self, subject: CallSubject, action: RuleAction) -> tuple[Rule, ...]:
        hits = list(self._any.get((subject.tool, action), ()))
        if subject.command is not None:
            for argv in subject.command.found:
                programs = {program_name(w) for w in argv if w is not None}
                for program in programs:
                    for rule in self._broad_by_program.get((action, program), ()):
                        assert isinstance(rule.compiled, CommandPattern)
                        if rule not in hits and _broad_match(rule.compiled, argv):
                            hits.append(rule)
        for rule in self._patterned.get((subject.tool, action), ()):
            compiled = rule.compiled
            if subject.code is not None and isinstance(compiled, str):
                if compiled == subject.code:
                    hits.append(rule)
            elif (
                subject.paths is not None
                and isinstance(compiled, re.Pattern)
                and any(p is not None and compiled.fullmatch(p) for p in subject.paths)
            ):
                hits.append(rule)
        return tuple(hits)

    def _allowed(self, subject: CallSubject) -> tuple[Rule, ...] | None:
        wildcard = self._any.get((subject.tool, "allow"), [])
        if subject.command is not None:
            analysis = subject.command
            if not analysis.understood or not analysis.commands:
                return None
            used: list[Rule] = []
            for argv in analysis.commands:
                found = next(
                    (
                        rule
                        for rule in self._allow_by_program.get(argv[0], ())
                        if isinstance(rule.compiled, CommandPattern)
                        and rule.tool == subject.tool
                        and _words_match(rule.compiled.words, rule.compiled.open_ended, argv)
                    ),
                    wildcard[0] if wildcard else None,
                )
                if found is None:
                    return None
                if found not in used:
                    used.append(found)
            return tuple(used)
        if wildcard and subject.tool != "terminal":
            return (wildcard[0],)
        rules = self._patterned.get((subject.tool, "allow"), ())
        if subject.code is not None:
            found = next((r for r in rules if r.compiled == subject.code), None)
            return None if found is None else (found,)
        if subject.paths:
            used = []
            for path in subject.paths:
                if path is None:
                    return None
                match = next(
                    (
                        r
                        for r in rules
                        if isinstance(r.compiled, re.Pattern) and r.compiled.fullmatch(path)
                    ),
                    None,
                )
                if match is None:
                    return None
                if match not in used:
                    used.append(match)
            return tuple(used)
        return None
