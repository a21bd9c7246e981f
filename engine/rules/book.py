"""What one turn decides with: the loaded rules and the session's grants."""

from __future__ import annotations

import asyncio
import datetime
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from engine.rules.decision import Choice
from engine.rules.matching import RuleIndex
from engine.rules.model import Rule, RuleError

logger = logging.getLogger(__name__)


@dataclass
class RuleBook:
    """The rules in force for one turn."""

    loaded: Sequence[Rule] = ()
    """Built-in, user (those for this workspace) and workspace rules, loaded for the turn."""
    grants: list[Rule] = field(default_factory=list)
    """The session's grants (shared with the session: a grant lasts as long as it)."""
    user_folder: Path | None = None
    """Where ``allow_always`` writes (None: nowhere, so it is not offered)."""
    scope: str | None = None
    """The workspace a remembered rule applies in."""
    _index: RuleIndex | None = field(default=None, repr=False)
    _key: tuple[int, ...] = field(default=(), repr=False)

    @property
    def index(self) -> RuleIndex:
        """The index of every rule in force now (rebuilt when a rule was granted, remembered or
        removed since: grants change while a session lives)."""
        key = (id(self.loaded), len(self.loaded), *map(id, self.grants))
        if self._index is None or key != self._key:
            self._index = RuleIndex([*self.loaded, *self.grants])
            self._key = key
        return self._index

    def remember(self, rule: Rule) -> Rule:
        """Write an ``allow_always`` rule to the user's file (blocking: call it off the event
        loop) and use it for the rest of the turn."""
        from engine.rules.store import UserRules  # noqa: PLC0415

        if self.user_folder is None:
            raise RuleError("there is no user data folder to remember rules in")
        stored = UserRules(self.user_folder).add(rule)
        self.loaded = [*self.loaded, stored]
        return stored

    async def record_answer(
        self, choice: Choice, digest: str, session_key: str
    ) -> tuple[str, str | None]:
        """Record what an allow answer grants beyond this call: a session grant
        (``allow_session``) or a user rule for this workspace (``allow_always``, written off the
        event loop), each keeping the SHA-256 of the approved call. Returns what decidedBy says
        and the status line for people (None: nothing to say)."""
        rule = choice.rule
        if rule is None or choice.kind == "allow_once":
            return "allowed once", None
        now = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
        if choice.kind == "allow_session":
            grant = replace(
                rule, source="session", approved_sha256=digest, created=now, session_id=session_key
            )
            self.grants.append(grant)
            return (
                f"allowed, and {grant.describe()} granted for this session",
                f"Allowed {grant.describe()} for this session",
            )
        wanted = replace(rule, source="user", scope=self.scope, approved_sha256=digest, created=now)
        try:
            stored = await asyncio.to_thread(self.remember, wanted)
        except (OSError, RuleError) as exc:
            logger.warning("could not remember a rule: %s", exc)
            return (
                f"allowed once (remembering {wanted.describe()} failed: {exc})",
                f"Allowed once: the rule could not be remembered ({exc})",
            )
        return (
            f"allowed, and {stored.describe()} remembered for this workspace",
            f"Always allowed {stored.describe()} in this workspace",
        )
