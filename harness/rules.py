"""``/rules`` in ``gatehouse chat``: list, add and remove rules (``agent/rules``,
``agent/rules/add``, ``agent/rules/remove``).

::

    /rules                          every rule in force here, where each came from, and problems
    /rules remove ID                remove one of your rules or a session grant
    /rules add ACTION TOOL [PATTERN]   your rule for this workspace (ACTION: allow, ask or deny)

Everything shown goes through the display rule (a pattern is model-written text when an approval
made it).
"""

from __future__ import annotations

import shlex
from typing import Any

from pydantic import ValidationError

from harness.connection import ErrorResponse, RpcClient
from harness.view import View
from server.protocol import (
    AGENT_RULES,
    AGENT_RULES_ADD,
    AGENT_RULES_REMOVE,
    AddRuleResult,
    RemoveRuleResult,
    RulesResult,
    RuleView,
)
from server.protocol.display import visible

USAGE = "usage: /rules, /rules remove ID, /rules add allow|ask|deny TOOL [PATTERN]"
_SOURCES = {
    "builtin": "built-in",
    "user": "yours",
    "workspace": "workspace file",
    "session": "this session",
}


def rule_line(rule: RuleView) -> str:
    pattern = "(every call)" if rule.pattern is None else f"`{rule.pattern}`"
    where = _SOURCES[rule.source]
    if rule.source == "user":
        where += ", this workspace" if rule.scope else ", every workspace"
    elif rule.source == "workspace":
        where = rule.where
    line = f"{rule.rule_id}  {rule.action:<5} {rule.tool} {pattern}  ({where})"
    return visible(line)


class RulesCommand:
    def __init__(self, client: RpcClient, view: View, session_id: str | None) -> None:
        self.client = client
        self.view = view
        self.session_id = session_id

    async def run(self, args: str) -> None:
        try:
            words = shlex.split(args)
        except ValueError as exc:
            self.view.note(f"{exc}; {USAGE}", "red")
            return
        try:
            if not words:
                await self.list()
            elif words[0] == "remove" and len(words) == 2:
                await self.remove(words[1])
            elif words[0] == "add" and len(words) >= 3:
                pattern = " ".join(words[3:]) if len(words) > 3 else None
                await self.add(words[1], words[2], pattern)
            else:
                self.view.note(USAGE, "yellow")
        except ErrorResponse as exc:
            self.view.note(f"error: {visible(exc.message)}", "red")
        except ValidationError:
            self.view.note("error: the server's answer is not in the protocol", "red")

    async def list(self) -> None:
        params: dict[str, Any] = {}
        if self.session_id is not None:
            params["sessionId"] = self.session_id
        result = RulesResult.model_validate(await self.client.request(AGENT_RULES, params))
        if not result.rules:
            self.view.note("no rules")
        for rule in result.rules:
            self.view.note(rule_line(rule))
        for problem in result.problems:
            self.view.note(f"problem: {visible(problem)}", "yellow")
        where = [f"workspace file: {result.workspace_file}"]
        if result.user_file:
            where.insert(0, f"your file: {result.user_file}")
        self.view.note(visible(" · ".join(where)), "dim")

    async def remove(self, rule_id: str) -> None:
        raw = await self.client.request(AGENT_RULES_REMOVE, {"ruleId": rule_id})
        removed = RemoveRuleResult.model_validate(raw).rule
        self.view.note(f"removed {rule_line(removed)}", "green")

    async def add(self, action: str, tool: str, pattern: str | None) -> None:
        params: dict[str, Any] = {"action": action, "tool": tool}
        if pattern is not None:
            params["pattern"] = pattern
        added = AddRuleResult.model_validate(await self.client.request(AGENT_RULES_ADD, params))
        self.view.note(f"added {rule_line(added.rule)}", "green")
