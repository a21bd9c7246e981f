"""Which files an edit must always ask about: the auto-run paths, and the server's own code.

The edit tools write from the server process, not from the sandbox, so the guard that undoes a
command's changes to auto-run paths (:mod:`sandbox.guard`) does not stand between an approved edit
and ``.git/hooks/pre-commit``. Such an edit is therefore always asked about, with the diff, even
after "allow for session" and with ``confirmFileEdits`` off (only a deny rule or
``bypassPermissions`` decide it without asking; see :func:`always_ask`): what
:mod:`sandbox.autorun` finds in the workspace (every ``.git``, ``.vscode``, hooks folders, what a
repository's config names, ...) and what the server runs or imports when it lies in the workspace
(:mod:`sandbox.runtime`).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from engine.gate import GatePolicy
from engine.rules.decision import choices_for
from engine.rules.policy import Verdict
from sandbox.autorun import AUTORUN_NAMES, AutorunScanner
from sandbox.runtime import inside_workspace

if TYPE_CHECKING:
    from sandbox.box import Box

_scanners: dict[str, AutorunScanner] = {}
_lock = threading.Lock()


def _scanner(root: Path) -> AutorunScanner:
    """One scanner per workspace: its listings are cached between calls."""
    key = os.path.realpath(root)
    with _lock:
        scanner = _scanners.get(key)
        if scanner is None:
            scanner = _scanners[key] = AutorunScanner(Path(key))
        return scanner


def _covers(outer: str, inner: str) -> bool:
    return inner == outer or inner.startswith(outer + "/")


class Protection:
    """Which files of one workspace are protected, found once for one edit call."""

    def __init__(self, root: Path, box: Box | None = None) -> None:
        self.root = root
        self.box = box
        self._found: dict[str, str] | None = None
        self._runtime: list[str] | None = None

    def reason(self, path: str) -> str | None:
        """Why the workspace file ``path`` (relative, canonical) must always be asked about,
        or None for an ordinary file."""
        parts = path.split("/")
        for depth, part in enumerate(parts):
            if part in AUTORUN_NAMES:
                return f"{'/'.join(parts[: depth + 1])}: {AUTORUN_NAMES[part]}"
        if self._found is None:
            self._found = _scanner(self.root).find()
        for found, why in self._found.items():
            if _covers(found, path):
                return f"{found}: {why}"
        if self.box is None:
            return None
        if self._runtime is None:
            runtime = self.box.sandbox.runtime()
            self._runtime = inside_workspace(runtime, self.root, strict=True)
        real = os.path.join(os.path.realpath(self.root), path)
        for runtime_path in self._runtime:
            if _covers(runtime_path, real):
                return f"{runtime_path}: part of what the Gatehouse server itself runs or imports"
        return None


def always_ask(verdict: Verdict, gate: GatePolicy) -> Verdict:
    """The verdict on an edit of a protected path: a person is asked (``protected_path``,
    Deny or Allow once, no grant), whatever the flags, the allow rules and the session's grants
    said; only a deny rule (refused) or ``bypassPermissions`` (runs) decide without asking."""
    if verdict.outcome == "deny" or gate.bypass_permissions:
        return verdict
    return Verdict(
        "ask",
        reason="protected_path",
        choices=choices_for(None, offer_rules=False),
        unclear=verdict.unclear,
    )
