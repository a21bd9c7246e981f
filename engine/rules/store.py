"""Where rules come from, in the documented order: built-in, user, workspace, session.

- **built-in** (:data:`BUILTIN_RULES`): a few ``ask`` rules for commands that publish or push
  (irreversible and outward). They only ask, never allow or deny, and cannot be removed.
- **user**: ``rules.toml`` in the user's data folder (:func:`engine.datadir.data_dir`), outside
  every workspace, so approved code cannot write it. A rule there has a ``workspace`` (the folder
  it applies in: what "Always allow" writes) or none (every workspace). Written atomically under
  a lock, so two servers can share it.
- **workspace**: ``.gatehouse/rules.toml`` in the workspace, an auto-run path (approved code
  cannot change it: :mod:`sandbox.autorun`). It can only add ``ask`` and ``deny``: a cloned
  repository can never approve anything. An ``allow`` there is reported and ignored. It is read
  without following symbolic links.
- **session**: the grants of "Allow ... in this session", kept with the session.

Both files hold ``[[rule]]`` tables with ``action``, ``tool`` and ``pattern`` (optional)::

    [[rule]]
    action = "deny"
    tool = "terminal"
    pattern = "curl *"
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import json
import logging
import os
import tempfile
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.rules.model import ACTIONS, Rule, RuleError, RuleSource

logger = logging.getLogger(__name__)

USER_FILE = "rules.toml"
WORKSPACE_FILE = ".gatehouse/rules.toml"
MAX_FILE_BYTES = 1 << 20

BUILTIN_RULES: tuple[Rule, ...] = tuple(
    Rule("ask", "terminal", pattern, source="builtin", where="built-in")
    for pattern in (
        "git push *",
        "npm publish *",
        "cargo publish *",
        "twine upload *",
        "docker push *",
    )
)


@dataclass(frozen=True)
class Loaded:
    rules: tuple[Rule, ...]
    problems: tuple[str, ...]


def _rules_from(
    data: dict[str, Any], source: RuleSource, where: str, workspace: str | None
) -> tuple[list[Rule], list[str]]:
    rules: list[Rule] = []
    problems: list[str] = []
    entries = data.get("rule", [])
    if not isinstance(entries, list):
        return [], [f"{where}: `rule` must be an array of tables ([[rule]])"]
    for number, entry in enumerate(entries, start=1):
        at = f"{where} rule {number}"
        if not isinstance(entry, dict):
            problems.append(f"{at}: not a table")
            continue
        action, tool, pattern = entry.get("action"), entry.get("tool"), entry.get("pattern")
        scope = entry.get("workspace")
        if action not in ACTIONS or not isinstance(tool, str):
            problems.append(f"{at}: needs action (allow, ask or deny) and tool")
            continue
        if pattern is not None and not isinstance(pattern, str):
            problems.append(f"{at}: pattern must be a string")
            continue
        if source == "workspace" and action == "allow":
            problems.append(
                f"{at}: `allow` is ignored in a workspace file (a repository cannot approve "
                f"anything); {tool} `{pattern or '*'}` still asks. Add it as your own rule "
                "to allow it."
            )
            continue
        if scope is not None and (source != "user" or not isinstance(scope, str)):
            problems.append(f"{at}: `workspace` is only for your own rules")
            continue
        if workspace is not None and scope is not None and scope != workspace:
            continue  # a user rule for another workspace
        try:
            rule = Rule(
                action,
                tool,
                pattern,
                source=source,
                scope=scope,
                where=at,
                approved_sha256=entry.get("approved_sha256"),
                created=entry.get("created"),
            )
        except RuleError as exc:
            problems.append(f"{at}: {exc}")
            continue
        rules.append(rule)
    return rules, problems


def _parse(text: str, where: str) -> tuple[dict[str, Any], list[str]]:
    try:
        return tomllib.loads(text), []
    except tomllib.TOMLDecodeError as exc:
        return {}, [f"{where}: not valid TOML ({exc}); none of its rules apply"]


def load_workspace_rules(workspace: Path) -> Loaded:
    """The workspace file's rules (ask and deny only) and what was wrong with it."""
    from engine.tools.base import ToolError  # noqa: PLC0415
    from engine.workspace_fs import WorkspaceFS  # noqa: PLC0415

    try:
        with WorkspaceFS(workspace) as fs:
            opened, info = fs.open_file(WORKSPACE_FILE)
    except ToolError as exc:
        if (workspace / WORKSPACE_FILE).exists() or (workspace / WORKSPACE_FILE).is_symlink():
            return Loaded((), (f"{WORKSPACE_FILE}: cannot be read ({exc})",))
        return Loaded((), ())
    with os.fdopen(opened.fd, "rb") as handle:
        raw = handle.read(MAX_FILE_BYTES + 1)
    if len(raw) > MAX_FILE_BYTES or info.st_size > MAX_FILE_BYTES:
        return Loaded((), (f"{WORKSPACE_FILE}: larger than 1 MiB; none of its rules apply",))
    data, problems = _parse(raw.decode("utf-8", "replace"), WORKSPACE_FILE)
    rules, more = _rules_from(data, "workspace", WORKSPACE_FILE, None)
    return Loaded(tuple(rules), tuple(problems + more))


class UserRules:
    """The user's rules file (``rules.toml`` in the data folder)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.path = folder / USER_FILE

    def load(self, workspace: str | None) -> Loaded:
        """The rules that apply in ``workspace`` (None: every rule in the file)."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return Loaded((), ())
        except OSError as exc:
            return Loaded((), (f"{self.path}: cannot be read ({exc})",))
        data, problems = _parse(text, str(self.path))
        rules, more = _rules_from(data, "user", f"your {USER_FILE}", workspace)
        return Loaded(tuple(rules), tuple(problems + more))

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(self.folder / ".rules.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def add(self, rule: Rule) -> Rule:
        """Write ``rule`` (a user rule); the rule as stored (an equal rule is not doubled)."""
        stamped = Rule(
            rule.action,
            rule.tool,
            rule.pattern,
            source="user",
            scope=rule.scope,
            approved_sha256=rule.approved_sha256,
            created=rule.created
            or datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        )
        with self._locked():
            rules = list(self.load(None).rules)
            existing = next((r for r in rules if r.id == stamped.id), None)
            if existing is not None:
                return existing
            rules.append(stamped)
            self._write(rules)
        return stamped

    def remove(self, rule_id: str) -> Rule | None:
        with self._locked():
            rules = list(self.load(None).rules)
            found = next((r for r in rules if r.id == rule_id), None)
            if found is not None:
                self._write([r for r in rules if r.id != rule_id])
        return found

    def _write(self, rules: list[Rule]) -> None:
        lines = [
            "# Gatehouse: your rules (see README.md, 'Rules'). One [[rule]] table per rule:",
            "# action (allow | ask | deny), tool, pattern (optional), workspace (optional: the",
            "# folder it applies in; without it, every workspace).",
        ]
        for rule in rules:
            lines.append("")
            lines.append("[[rule]]")
            fields: list[tuple[str, str | None]] = [
                ("action", rule.action),
                ("tool", rule.tool),
                ("pattern", rule.pattern),
                ("workspace", rule.scope),
                ("approved_sha256", rule.approved_sha256),
                ("created", rule.created),
            ]
            lines += [
                f"{key} = {_toml_string(value)}" for key, value in fields if value is not None
            ]
        fd, tmp = tempfile.mkstemp(prefix=".rules-", suffix=".tmp", dir=self.folder)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write("\n".join(lines) + "\n")
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise


def _toml_string(value: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's, DEL and lone surrogates aside)."""
    text = json.dumps(value, ensure_ascii=False)
    return text.replace("\x7f", "\\u007f")
