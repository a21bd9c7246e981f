"""Rules on the wire: ``agent/rules``, ``agent/rules/add``, ``agent/rules/remove``, the choices
of ``toolConfirm`` and who decided a call (``tool_end``'s ``decidedBy``)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from engine.rules.kinds import ChoiceKind, DeciderKind, RuleAction, RuleSource
from server.protocol.base import StrictParams, WireModel, optional

RuleScope = Literal["workspace", "everywhere", "session"]
"""Where an added rule applies: this workspace (a user rule), every workspace (a user rule), or
one session (a session grant)."""


class RuleSpec(WireModel):
    """A rule's meaning: ``{action, tool, pattern?}``."""

    action: RuleAction = Field(description="allow, ask or deny.")
    tool: str = Field(description="The tool it is about (terminal, python, read_file, ...).")
    pattern: str | None = optional(
        "terminal: a command whose words prefix the parsed command, a final * for any further "
        "words (`pytest *`); python: the exact code; other tools: a path glob relative to the "
        "workspace (`src/**`). Absent: every call of the tool (terminal rules need one)."
    )


class RuleView(RuleSpec):
    """A rule and where it came from."""

    rule_id: str = Field(description="Stable id (agent/rules/remove takes it).")
    source: RuleSource = Field(
        description="builtin, user (your rules file), workspace (.gatehouse/rules.toml) or "
        "session (a grant of this session)."
    )
    where: str = Field(description="Where it is written, for people.")
    scope: str | None = optional("User rules: the workspace folder it applies in; absent: every.")
    session_id: str | None = optional("Session grants: the session.")
    approved_sha256: str | None = optional(
        "A rule made from an approval: the SHA-256 of the call that was approved."
    )
    created: str | None = optional("When it was made (ISO 8601), when known.")
    removable: bool = Field(description="Whether agent/rules/remove can remove it.")


class RulesParams(StrictParams):
    """``agent/rules`` params."""

    session_id: str | None = optional("Only this session's grants (default: every session's).")


class RulesResult(WireModel):
    """``agent/rules`` result: every rule in force in this workspace, sources in order."""

    rules: list[RuleView] = Field(description="built-in, user, workspace, then session rules.")
    problems: list[str] = Field(
        description="What was wrong in a rules file (an ignored `allow` in the workspace file, "
        "a bad pattern, invalid TOML): each such rule is not in force."
    )
    user_file: str | None = Field(description="Your rules file (None: no data folder).")
    workspace_file: str = Field(description="This workspace's rules file.")


class AddRuleParams(StrictParams):
    """``agent/rules/add`` params."""

    action: RuleAction = Field(description="allow, ask or deny.")
    tool: str = Field(description="A built-in tool's name.")
    pattern: str | None = optional("As in RuleSpec.")
    scope: RuleScope = Field(
        default="workspace",
        description="workspace (default: a user rule for this workspace), everywhere (a user "
        "rule for every workspace) or session (a grant of sessionId).",
    )
    session_id: str | None = optional("The session, for scope session.")


class AddRuleResult(WireModel):
    rule: RuleView


class RemoveRuleParams(StrictParams):
    """``agent/rules/remove`` params."""

    rule_id: str = Field(description="The id from agent/rules.")


class RemoveRuleResult(WireModel):
    rule: RuleView = Field(description="The rule that was removed.")


class ChoiceView(WireModel):
    """One answer a ``toolConfirm`` offers."""

    id: str = Field(description="Send it back as the result's choice.")
    label: str = Field(
        description="What a button says, scope included (e.g. 'Allow `npm test *` in this "
        "session'). Holds model-written text: show it through the display rule."
    )
    kind: ChoiceKind = Field(
        description="allow_once, allow_session (grants rule for the session), allow_always "
        "(writes rule as a user rule for this workspace) or deny."
    )
    rule: RuleSpec | None = optional("The rule the choice creates.")


class RuleRef(WireModel):
    rule_id: str = Field(description="The rule's id.")
    source: RuleSource
    action: RuleAction
    tool: str
    pattern: str | None = optional("The rule's pattern.")


class DecidedByView(WireModel):
    """Who decided whether a call ran."""

    kind: DeciderKind = Field(
        description="rule (no prompt), person (an answer), settings (no confirm setting covers "
        "the call, or bypassPermissions) or failure (no valid answer)."
    )
    content_sha256: str = Field(
        description="SHA-256 of (tool, canonical arguments, working folder): what was decided."
    )
    rules: list[RuleRef] | None = optional("kind rule: the rules that decided.")
    choice: ChoiceKind | None = optional("kind person: the answer.")
    detail: str = Field(description="One sentence for people.")
