"""Who decided a call, and the choices a person is offered.

:class:`DecidedBy` is the one record of every decision (the audit log reads it from
:attr:`engine.turns.ToolCallRecord.decided_by`, and ``tool_end`` carries it on the wire): which
rules (id, source), which answer of which person, or which setting decided, and the SHA-256 of
the content that was decided (:mod:`sandbox.binding`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from engine.rules.kinds import ChoiceKind, DeciderKind
from engine.rules.model import Rule, pattern_kind
from engine.rules.shell import CommandAnalysis


@dataclass(frozen=True)
class DecidedBy:
    kind: DeciderKind
    content_sha256: str
    rules: tuple[Rule, ...] = ()
    choice: ChoiceKind | None = None
    detail: str = ""
    """One sentence for people, e.g. "allowed by your rule terminal `pytest *`"."""


@dataclass(frozen=True)
class Choice:
    """One answer a prompt offers, and what the server records for it."""

    id: str
    label: str
    kind: ChoiceKind
    rule: Rule | None = None
    """The rule the choice creates (allow_session: a session grant; allow_always: a user rule
    for this workspace)."""


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


EXACT_PROGRAMS = _names(
    "python python3 python2 pypy pypy3 node nodejs deno bun perl ruby php lua luajit Rscript "
    "java osascript rm rmdir mv dd chmod chown chgrp curl wget ssh scp sftp rsync nc ncat "
    "socat telnet ftp kill pkill killall shred truncate mkfs npx uvx pipx pip pip3 docker "
    "podman kubectl"
)
"""Programs whose proposed rule is the exact command, never a ``*`` for further words: their
arguments are code, a target or a destructive scope."""

_SUBCOMMAND = re.compile(r"[a-z][a-z0-9_-]{0,30}")


def source_words(source: str) -> str:
    return {
        "builtin": "built-in",
        "user": "your",
        "workspace": "the workspace's",
        "session": "this session's",
    }[source]


def propose(
    tool: str, kind: str, analysis: CommandAnalysis | None, arguments: dict[str, object]
) -> Rule | None:
    """The allow rule a prompt offers to grant for this call, or None when no rule would say
    what the person is looking at (an unclear or compound command, a path outside the
    workspace, a tool whose paths cannot be told)."""
    from engine.rules.model import normal_path  # noqa: PLC0415

    pk = pattern_kind(tool)
    if pk == "command":
        if analysis is None or not analysis.understood or len(analysis.commands) != 1:
            return None
        argv = analysis.commands[0]
        from engine.rules.words import join  # noqa: PLC0415

        if argv[0] in EXACT_PROGRAMS or "/" in argv[0]:
            return Rule("allow", tool, join(argv), source="session")
        words = [argv[0]]
        if len(argv) > 1 and _SUBCOMMAND.fullmatch(argv[1]):
            words.append(argv[1])
        return Rule("allow", tool, join(words) + " *", source="session")
    if pk == "code":
        code = arguments.get("code")
        return Rule("allow", tool, code, source="session") if isinstance(code, str) else None
    if "path" not in arguments and tool not in ("list_files", "search_files"):
        return None
    raw = arguments.get("path")
    if raw is not None and not isinstance(raw, str):
        return None
    path = normal_path(raw)
    if path is None or any(c in path for c in "*?[]"):
        return None
    if kind in ("read", "search") and "/" in path:
        return Rule("allow", tool, path.rsplit("/", 1)[0] + "/**", source="session")
    return Rule("allow", tool, path, source="session")


def scope_label(rule: Rule) -> str:
    shown = rule.shown_pattern()
    return f"`{shown}`" if rule.tool == "terminal" else f"{rule.tool} `{shown}`"


def choices_for(proposal: Rule | None, offer_rules: bool) -> tuple[Choice, ...]:
    """Deny first (the default of every prompt), then allow once, then the scoped grants."""
    choices = [Choice("deny", "Deny", "deny"), Choice("allow_once", "Allow once", "allow_once")]
    if proposal is not None and offer_rules:
        scope = scope_label(proposal)
        choices.append(
            Choice("allow_session", f"Allow {scope} in this session", "allow_session", proposal)
        )
        choices.append(
            Choice(
                "allow_always",
                f"Always allow {scope} in this workspace",
                "allow_always",
                Rule("allow", proposal.tool, proposal.pattern, source="user"),
            )
        )
    return tuple(choices)
