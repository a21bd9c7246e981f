"""``agent/rules``, ``agent/rules/add`` and ``agent/rules/remove``, the rules each turn loads, and
how rules, choices and decisions look on the wire.

Every file access runs off the event loop. The user's file lives in the data folder
(:func:`engine.datadir.data_dir`); when there is none (it cannot be created), "Always allow" is not
offered and adding a user rule is refused.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from engine.rules.decision import Choice, DecidedBy
from engine.rules.model import Rule, RuleError
from engine.rules.store import BUILTIN_RULES, WORKSPACE_FILE, UserRules, load_workspace_rules
from engine.tools import BUILTIN_TOOL_NAMES
from server.errors import InvalidParams, InvalidRequest, unknown_session
from server.protocol import InvalidParamsData
from server.protocol.rules import (
    AddRuleParams,
    AddRuleResult,
    ChoiceView,
    DecidedByView,
    RemoveRuleParams,
    RemoveRuleResult,
    RuleRef,
    RulesParams,
    RuleSpec,
    RulesResult,
    RuleView,
)
from server.sessions import SessionStore

logger = logging.getLogger(__name__)


def rule_view(rule: Rule, session_id: str | None = None) -> RuleView:
    return RuleView(
        rule_id=rule.id,
        action=rule.action,
        tool=rule.tool,
        pattern=rule.pattern,
        source=rule.source,
        where=rule.where or {"session": "this session", "user": "your rules"}.get(rule.source, ""),
        scope=rule.scope,
        session_id=session_id,
        approved_sha256=rule.approved_sha256,
        created=rule.created,
        removable=rule.source in ("user", "session"),
    )


def rule_ref(rule: Rule) -> RuleRef:
    return RuleRef(
        rule_id=rule.id,
        source=rule.source,
        action=rule.action,
        tool=rule.tool,
        pattern=rule.pattern,
    )


def choice_view(choice: Choice) -> ChoiceView:
    rule = choice.rule
    spec = (
        None if rule is None else RuleSpec(action=rule.action, tool=rule.tool, pattern=rule.pattern)
    )
    return ChoiceView(id=choice.id, label=choice.label, kind=choice.kind, rule=spec)


def decided_by_view(decided: DecidedBy) -> DecidedByView:
    return DecidedByView(
        kind=decided.kind,
        content_sha256=decided.content_sha256,
        rules=[rule_ref(r) for r in decided.rules] or None,
        choice=decided.choice,
        detail=decided.detail,
    )


class RulesService:
    """The rules of one server's workspace: the files, and the sessions' grants."""

    def __init__(self, sessions: SessionStore, workspace: Path) -> None:
        self.sessions = sessions
        self.workspace = workspace
        self._user: UserRules | None = None
        self._user_checked = False
        self._user_problem: str | None = None
        """Why there are no user rules, when there could be (said with the rules' problems)."""
        self._reported: set[str] = set()

    def configure(self, workspace: Path) -> None:
        self.workspace = workspace
        self._user, self._user_checked, self._user_problem = None, False, None

    @property
    def scope(self) -> str:
        return str(self.workspace)

    def user_rules(self) -> UserRules | None:
        """The user's rules file (blocking: the data folder may be created)."""
        if not self._user_checked:
            self._user_checked = True
            try:
                from engine.datadir import data_dir, exposed_in  # noqa: PLC0415

                folder = data_dir()
                # an allow rule approved code wrote there would let its next command through
                self._user_problem = exposed_in(self.workspace, folder)
                if self._user_problem is None:
                    self._user = UserRules(folder)
                else:
                    self._user_problem = f"your rules are not read: {self._user_problem}"
            except OSError as exc:
                logger.warning("no user data folder, so no user rules: %s", exc)
        return self._user

    def load(self) -> tuple[tuple[Rule, ...], list[str]]:
        """Built-in, user (for this workspace) and workspace rules, and the problems found
        (blocking: call it off the event loop)."""
        rules: list[Rule] = list(BUILTIN_RULES)
        problems: list[str] = []
        user = self.user_rules()
        if user is not None:
            loaded = user.load(self.scope)
            rules += loaded.rules
            problems += loaded.problems
        elif self._user_problem is not None:
            problems.append(self._user_problem)
        workspace = load_workspace_rules(self.workspace)
        rules += workspace.rules
        problems += workspace.problems
        for rule in rules:
            if rule.tool not in BUILTIN_TOOL_NAMES:
                problems.append(f"{rule.where}: unknown tool {rule.tool!r}; the rule never matches")
        return tuple(rules), problems

    def new_problems(self, problems: list[str]) -> list[str]:
        """The problems not reported yet by this server (each is said once)."""
        fresh = [p for p in problems if p not in self._reported]
        self._reported.update(fresh)
        for problem in fresh:
            logger.warning("rules: %s", problem)
        return fresh

    def _grants(self, session_id: str | None) -> list[RuleView]:
        views = []
        for session in self.sessions.all():
            if session_id is None or session.session_id == session_id:
                views += [rule_view(r, session.session_id) for r in session.conversation.grants]
        return views

    async def list(self, params: RulesParams) -> RulesResult:
        if params.session_id is not None and self.sessions.get(params.session_id) is None:
            raise unknown_session(params.session_id)
        rules, problems = await asyncio.to_thread(self.load)
        user = self._user
        return RulesResult(
            rules=[rule_view(r) for r in rules] + self._grants(params.session_id),
            problems=problems,
            user_file=None if user is None else str(user.path),
            workspace_file=str(self.workspace / WORKSPACE_FILE),
        )

    async def add(self, params: AddRuleParams) -> AddRuleResult:
        if params.tool not in BUILTIN_TOOL_NAMES:
            raise InvalidParams(
                f"Invalid params: tool: unknown tool {params.tool!r}; built-in tools are "
                f"{', '.join(BUILTIN_TOOL_NAMES)}",
                InvalidParamsData(fields=["tool"]),
            )
        scope = None if params.scope == "everywhere" else self.scope
        try:
            rule = Rule(params.action, params.tool, params.pattern, source="user", scope=scope)
        except RuleError as exc:
            raise InvalidParams(
                f"Invalid params: pattern: {exc}", InvalidParamsData(fields=["pattern"])
            ) from None
        if params.scope == "session":
            if params.session_id is None:
                raise InvalidParams(
                    "Invalid params: sessionId: scope session needs a sessionId",
                    InvalidParamsData(fields=["sessionId"]),
                )
            session = self.sessions.get(params.session_id)
            if session is None:
                raise unknown_session(params.session_id)
            grant = Rule(
                rule.action,
                rule.tool,
                rule.pattern,
                source="session",
                session_id=session.conversation.key,
            )
            if grant not in session.conversation.grants:
                session.conversation.grants.append(grant)
            return AddRuleResult(rule=rule_view(grant, session.session_id))
        user = await asyncio.to_thread(self.user_rules)
        if user is None:
            raise InvalidRequest(
                f"There is no user data folder to keep rules in"
                f"{': ' + self._user_problem if self._user_problem else '.'}"
            )
        stored = await asyncio.to_thread(user.add, rule)
        return AddRuleResult(rule=rule_view(stored))

    async def remove(self, params: RemoveRuleParams) -> RemoveRuleResult:
        for session in self.sessions.all():
            grants = session.conversation.grants
            found = next((r for r in grants if r.id == params.rule_id), None)
            if found is not None:
                grants.remove(found)
                return RemoveRuleResult(rule=rule_view(found, session.session_id))
        rules, _problems = await asyncio.to_thread(self.load)
        fixed = next((r for r in rules if r.id == params.rule_id), None)
        if fixed is not None and fixed.source in ("builtin", "workspace"):
            where = "part of Gatehouse" if fixed.source == "builtin" else f"in {WORKSPACE_FILE}"
            raise InvalidRequest(
                f"The rule {fixed.describe()} is {where}; it cannot be removed here"
                + (" (edit that file)." if fixed.source == "workspace" else ".")
            )
        user = await asyncio.to_thread(self.user_rules)
        removed = None if user is None else await asyncio.to_thread(user.remove, params.rule_id)
        if removed is None:
            raise InvalidParams(
                f"Invalid params: ruleId: no rule {params.rule_id!r} (agent/rules lists them)",
                InvalidParamsData(fields=["ruleId"]),
            )
        return RemoveRuleResult(rule=rule_view(removed))
