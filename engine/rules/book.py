"""What one turn decides with: the loaded rules and the session's grants."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from engine.rules.matching import RuleIndex
from engine.rules.model import Rule, RuleError


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
