"""Rules beyond the terminal corpus: path globs, exact code, the sources and their files, the
choices a prompt offers, who decided each call, and approvals bound to their content."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pytest

from engine.approvals import ApprovalOutcome
from engine.gate import GatePolicy
from engine.rules.book import RuleBook
from engine.rules.decision import propose
from engine.rules.model import Rule, RuleError
from engine.rules.policy import decide
from engine.rules.shell import analyse
from engine.rules.store import UserRules, load_workspace_rules
from engine.tools import BUILTIN_TOOLS
from engine.tools.base import Tool, ToolContext
from engine.tools.execution import TerminalArgs
from engine.turns import Conversation
from sandbox.binding import Binding, BindingMismatch, content_digest
from sandbox.runner import ExecRequest, execute
from tests.unit.test_loop import ALLOW, Harness, call, lines

ASK_ALL = GatePolicy(confirm_tool_calls=True)
D = "0" * 64


def outcome(tool: Any, arguments: dict[str, Any], rules: list[Rule], policy: GatePolicy) -> str:
    return decide(policy, tool, arguments, RuleBook(rules).index, D).outcome


# --- path tools ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("src/main.py", "run"),
        ("src/a/b/c.py", "run"),
        ("./src/x.py", "run"),
        ("srcx/main.py", "ask"),
        ("src/../secrets.txt", "ask"),
        ("../outside.py", "ask"),
        ("/etc/passwd", "ask"),
        ("src/.env", "deny"),
    ],
)
def test_a_read_rule_is_a_path_glob_inside_the_workspace(path: str, expected: str) -> None:
    rules = [Rule("allow", "read_file", "src/**"), Rule("deny", "read_file", "**/.env")]
    assert outcome(BUILTIN_TOOLS["read_file"], {"path": path}, rules, ASK_ALL) == expected


def test_a_deny_rule_on_reading_applies_even_when_reading_is_never_asked_about() -> None:
    rules = [Rule("deny", "read_file", ".env")]
    assert outcome(BUILTIN_TOOLS["read_file"], {"path": ".env"}, rules, GatePolicy()) == "deny"
    assert outcome(BUILTIN_TOOLS["read_file"], {"path": "a.txt"}, rules, GatePolicy()) == "run"


@dataclass(frozen=True)
class EditTool:
    """Stands for the edit tools of issue 10: kind ``edit``, a ``path`` argument."""

    name: str = "edit_file"
    kind: str = "edit"
    runs_code: bool = False


def test_edit_rules_are_path_globs_matched_on_the_tool_kind_and_its_path_argument() -> None:
    tool = cast(Tool, EditTool())
    rules = [Rule("allow", "edit_file", "docs/*.md"), Rule("deny", "edit_file", "**/*.lock")]
    args = {"path": "docs/a.md", "content": "x"}
    assert outcome(tool, args, rules, ASK_ALL) == "run"
    assert outcome(tool, {"path": "docs/sub/a.md"}, rules, ASK_ALL) == "ask"
    assert outcome(tool, {"path": "uv.lock"}, rules, GatePolicy()) == "deny"
    assert outcome(tool, {"patch": "..."}, rules, ASK_ALL) == "ask"  # paths unknown: never allowed
    proposal = propose("edit_file", "edit", None, {"path": "docs/new.md"})
    assert proposal is not None and proposal.pattern == "docs/new.md"  # an edit: the exact file


def test_a_python_rule_is_the_exact_code() -> None:
    python = BUILTIN_TOOLS["python"]
    rules = [Rule("allow", "python", "print(1)")]
    assert outcome(python, {"code": "print(1)"}, rules, GatePolicy()) == "run"
    assert outcome(python, {"code": "print(1) "}, rules, GatePolicy()) == "ask"
    assert outcome(python, {"code": "print(2)"}, [Rule("deny", "python")], GatePolicy()) == "deny"


# --- patterns and proposals -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "pattern"),
    [
        ("terminal", "pytest && curl x"),
        ("terminal", "pytest * -q"),
        ("terminal", "pytest > out"),
        ("terminal", "$(x)"),
        ("read_file", "../x"),
        ("read_file", "/etc/**"),
    ],
)
def test_a_pattern_that_cannot_mean_one_thing_is_refused(tool: str, pattern: str) -> None:
    with pytest.raises(RuleError):
        Rule("allow", tool, pattern)


@pytest.mark.parametrize(
    ("command", "proposed"),
    [
        ("pytest -q", "pytest *"),
        ("npm test -- --watch", "npm test *"),
        ("git status", "git status *"),
        ("rm -rf build", "rm -rf build"),
        ("python -c 'print(1)'", "python -c 'print(1)'"),
        ("./run.sh", "./run.sh"),
        ("pytest -q && ls", None),
        ("echo $(date)", None),
    ],
)
def test_the_proposed_rule_says_what_the_person_is_looking_at(
    command: str, proposed: str | None
) -> None:
    rule = propose("terminal", "execute", analyse(command), {"command": command})
    assert (None if rule is None else rule.pattern) == proposed


def test_a_prompt_offers_deny_first_and_labels_that_say_the_scope() -> None:
    verdict = decide(
        GatePolicy(),
        BUILTIN_TOOLS["terminal"],
        {"command": "npm test"},
        RuleBook().index,
        D,
    )
    assert [c.label for c in verdict.choices] == [
        "Deny",
        "Allow once",
        "Allow `npm test *` in this session",
        "Always allow `npm test *` in this workspace",
    ]


def test_an_ask_rule_prompt_offers_no_grant_it_would_overrule() -> None:
    verdict = decide(
        GatePolicy(),
        BUILTIN_TOOLS["terminal"],
        {"command": "git push origin main"},
        RuleBook([Rule("ask", "terminal", "git push *", source="builtin")]).index,
        D,
    )
    assert [c.kind for c in verdict.choices] == ["deny", "allow_once"]


# --- the files ------------------------------------------------------------------------------------


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_a_workspace_file_can_deny_and_ask_but_its_allow_is_reported_and_ignored(
    tmp_path: Path,
) -> None:
    write(
        tmp_path / ".gatehouse/rules.toml",
        '[[rule]]\naction = "allow"\ntool = "terminal"\npattern = "curl *"\n\n'
        '[[rule]]\naction = "deny"\ntool = "terminal"\npattern = "wget *"\n\n'
        '[[rule]]\naction = "ask"\ntool = "terminal"\npattern = "make *"\n',
    )
    loaded = load_workspace_rules(tmp_path)
    assert [(r.action, r.pattern, r.source) for r in loaded.rules] == [
        ("deny", "wget *", "workspace"),
        ("ask", "make *", "workspace"),
    ]
    assert len(loaded.problems) == 1 and "`allow` is ignored" in loaded.problems[0]


def test_a_workspace_rules_file_that_is_a_symbolic_link_out_is_not_read(tmp_path: Path) -> None:
    outside = tmp_path / "outside.toml"
    write(outside, '[[rule]]\naction = "deny"\ntool = "terminal"\npattern = "ls *"\n')
    ws = tmp_path / "ws"
    (ws / ".gatehouse").mkdir(parents=True)
    os.symlink(outside, ws / ".gatehouse/rules.toml")
    loaded = load_workspace_rules(ws)
    assert loaded.rules == () and "cannot be read" in loaded.problems[0]


def test_invalid_toml_is_reported_and_none_of_its_rules_apply(tmp_path: Path) -> None:
    write(tmp_path / ".gatehouse/rules.toml", "[[rule]\naction = deny")
    loaded = load_workspace_rules(tmp_path)
    assert loaded.rules == () and "not valid TOML" in loaded.problems[0]


def test_user_rules_round_trip_with_any_text_and_keep_their_ids(tmp_path: Path) -> None:
    user = UserRules(tmp_path / "data")
    tricky = "echo 'quote \" back\\slash é'"
    one = user.add(Rule("allow", "terminal", tricky, scope="/ws"))
    two = user.add(Rule("deny", "python", 'print("\\x7f")\n\x7f', scope=None))
    assert user.add(Rule("allow", "terminal", tricky, scope="/ws")).id == one.id  # not doubled
    here = user.load("/ws").rules
    assert [(r.pattern, r.id) for r in here] == [(tricky, one.id), (two.pattern, two.id)]
    assert [r.pattern for r in user.load("/elsewhere").rules] == [two.pattern]
    assert user.remove(one.id) == one
    assert [r.id for r in user.load("/ws").rules] == [two.id]
    assert user.remove("u-nothing") is None


# --- the loop: who decided, remembering, binding -------------------------------------------------


@pytest.fixture
def h(tmp_path: Path) -> Harness:
    ws = tmp_path / "ws"
    ws.mkdir()
    return Harness(ws)


async def test_every_decision_records_who_decided(h: Harness) -> None:
    rules = (Rule("allow", "terminal", "echo *"), Rule("deny", "terminal", "touch *"))
    result = await h.run(
        call("terminal", command="echo ok"),  # a rule
        call("terminal", command="touch x"),  # a deny rule
        call("terminal", command="ls"),  # a person
        call("read_file", path="nothing.txt"),  # the settings: reading is not asked about
        "Done.",
        answers=[ALLOW],
        rules=rules,
    )
    decided = [r.decided_by for r in result.tool_calls]
    assert [d.kind if d else None for d in decided] == ["rule", "rule", "person", "settings"]
    assert decided[0] is not None and decided[0].rules == (rules[0],)
    assert decided[1] is not None and decided[1].rules == (rules[1],)
    assert decided[2] is not None and decided[2].choice == "allow_once"
    assert [r.status for r in result.tool_calls][:3] == ["completed", "denied", "completed"]
    assert not (h.workspace / "x").exists()
    for record in result.tool_calls:
        assert record.decided_by is not None
        expected = content_digest(record.name, record.arguments, h.workspace)
        assert record.decided_by.content_sha256 == expected


async def test_always_allow_writes_a_user_rule_that_later_turns_use(
    h: Harness, tmp_path: Path
) -> None:
    folder = tmp_path / "data"
    settings: dict[str, Any] = {"user_rules_folder": folder, "rules_scope": str(h.workspace)}

    async def run_once(answers: list[ApprovalOutcome]) -> None:
        loaded = UserRules(folder).load(str(h.workspace)).rules
        await h.run(
            call("terminal", command="echo A1 >> out.txt"),
            "Done.",
            answers=answers,
            conversation=Conversation(),  # a new session: no session grants
            rules=loaded,
            **settings,
        )

    def always(request: Any) -> ApprovalOutcome:
        return ApprovalOutcome("allow", None, request.choice("allow_always"))

    h.answers = []
    original = h.approve

    async def approve(request: Any) -> ApprovalOutcome:
        await original(request)
        return always(request)

    h.approve = approve  # type: ignore[method-assign]
    await run_once([ALLOW])
    stored = UserRules(folder).load(str(h.workspace)).rules
    assert [(r.action, r.pattern, r.scope) for r in stored] == [
        ("allow", "echo *", str(h.workspace))
    ]
    assert stored[0].approved_sha256 == h.asked[0].content_sha256
    await run_once([])  # not asked: the remembered rule allows it
    assert len(h.asked) == 1
    assert lines(h.workspace / "out.txt") == ["A1", "A1"]


async def test_a_process_whose_content_is_not_what_was_approved_never_starts(
    tmp_path: Path,
) -> None:
    approved = content_digest("terminal", {"command": "echo approved"}, tmp_path)
    tool = BUILTIN_TOOLS["terminal"]
    ctx = ToolContext(workspace=tmp_path, timeout_seconds=10, digest=approved)
    result = await tool.run(TerminalArgs(command="touch swapped.txt"), ctx)
    assert not (tmp_path / "swapped.txt").exists()
    assert "not what was approved" in result.text
    same = await tool.run(TerminalArgs(command="echo approved"), ctx)
    assert "approved" in same.text and same.exit_code == 0


async def test_the_executor_checks_the_working_folder_too(tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    binding = Binding("terminal", {"command": "true"}, content_digest("terminal", {}, tmp_path))
    with pytest.raises(BindingMismatch):
        binding.check(tmp_path)
    good = Binding(
        "terminal", {"command": "true"}, content_digest("terminal", {"command": "true"}, tmp_path)
    )
    result = await execute(ExecRequest(("touch", "made"), other, 10, binding=good))
    assert result.exit_code is None and not (other / "made").exists()
    result = await execute(ExecRequest(("touch", "made"), tmp_path, 10, binding=good))
    assert result.exit_code == 0 and (tmp_path / "made").exists()
