"""The confirmation gate: which tool calls a person must approve, and which requests are refused.

The truth table is checked against the seed formula written out here, independently of the code
(the code reads "runs code" from the tool, the formula from the names)::

    needs_confirm = (confirm_tool_calls or (confirm_code_execution and name in {python, terminal}))
                    and not bypass_permissions
"""

from __future__ import annotations

import itertools

import pytest

from engine.gate import GatePolicy, unwireable_flag
from engine.tools import BUILTIN_TOOL_NAMES, BUILTIN_TOOLS
from engine.tools.base import Tool

CODE_TOOLS = ("python", "terminal")
FILE_TOOLS = ("read_file", "list_files", "search_files")
ALL_TOOLS = (*CODE_TOOLS, *FILE_TOOLS)


def tools(names: tuple[str, ...]) -> list[Tool]:
    return [BUILTIN_TOOLS[name] for name in names]


def seed_needs_confirm(
    confirm_tool_calls: bool, confirm_code_execution: bool, bypass: bool, name: str
) -> bool:
    """The seed's rule, spelled out case by case."""
    if bypass:
        return False  # bypass wins over everything
    if confirm_tool_calls:
        return True  # every tool is asked about
    return confirm_code_execution and name in CODE_TOOLS


TRUTH_TABLE = [
    pytest.param(
        ctc,
        cce,
        bypass,
        name,
        seed_needs_confirm(ctc, cce, bypass, name),
        id=f"toolCalls={ctc}-codeExec={cce}-bypass={bypass}-{name}",
    )
    for ctc, cce, bypass, name in itertools.product(
        (False, True), (False, True), (False, True), ALL_TOOLS
    )
]


def test_truth_table_has_all_forty_cases() -> None:
    assert len(TRUTH_TABLE) == 40


@pytest.mark.parametrize(("ctc", "cce", "bypass", "name", "expected"), TRUTH_TABLE)
def test_user_is_asked_exactly_when_the_seed_rule_says_so(
    ctc: bool, cce: bool, bypass: bool, name: str, expected: bool
) -> None:
    policy = GatePolicy(
        confirm_tool_calls=ctc, confirm_code_execution=cce, bypass_permissions=bypass
    )
    assert policy.needs_confirm(BUILTIN_TOOLS[name]) is expected


def test_default_policy_asks_before_code_runs_but_not_before_reading_files() -> None:
    policy = GatePolicy()
    asked = [name for name in ALL_TOOLS if policy.needs_confirm(BUILTIN_TOOLS[name])]
    assert asked == list(CODE_TOOLS)


def test_the_tools_that_run_code_are_exactly_python_and_terminal() -> None:
    assert {t.name for t in BUILTIN_TOOLS.values() if t.runs_code} == set(CODE_TOOLS)


def test_every_builtin_tool_is_classified_by_the_gate() -> None:
    # A new built-in tool must be placed on one side of the gate on purpose: its kind says
    # whether it runs code; this table (and the seed formula above) must then be extended.
    assert set(BUILTIN_TOOL_NAMES) == set(ALL_TOOLS)
    assert {t.kind for t in BUILTIN_TOOLS.values()} <= {"execute", "read", "search"}


@pytest.mark.parametrize(
    ("policy", "name", "reason"),
    [
        (GatePolicy(confirm_code_execution=True), "python", "code_execution"),
        (GatePolicy(confirm_code_execution=True), "terminal", "code_execution"),
        (
            GatePolicy(confirm_tool_calls=True, confirm_code_execution=True),
            "terminal",
            "code_execution",
        ),
        (
            GatePolicy(confirm_tool_calls=True, confirm_code_execution=True),
            "read_file",
            "all_tools",
        ),
        (
            GatePolicy(confirm_tool_calls=True, confirm_code_execution=False),
            "python",
            "all_tools",
        ),
        (
            GatePolicy(confirm_tool_calls=True, confirm_code_execution=False),
            "search_files",
            "all_tools",
        ),
    ],
)
def test_prompt_tells_the_user_why_they_are_asked(
    policy: GatePolicy, name: str, reason: str
) -> None:
    assert policy.needs_confirm(BUILTIN_TOOLS[name])
    assert policy.reason(BUILTIN_TOOLS[name]) == reason


# -- unwireable_flag: refusing up front a request whose approvals could not be asked ---------------


@pytest.mark.parametrize(
    ("policy", "tools_enabled", "enabled_tools", "max_tool_calls"),
    [
        pytest.param(
            GatePolicy(True, True, bypass_permissions=True), True, ALL_TOOLS, 25, id="bypass"
        ),
        pytest.param(GatePolicy(True, True), False, ALL_TOOLS, 25, id="tools-disabled"),
        pytest.param(GatePolicy(True, True), True, ALL_TOOLS, 0, id="max-tool-calls-0"),
        pytest.param(
            GatePolicy(confirm_tool_calls=False, confirm_code_execution=True),
            True,
            FILE_TOOLS,
            25,
            id="codeExec-without-python-or-terminal",
        ),
        pytest.param(
            GatePolicy(confirm_tool_calls=True, confirm_code_execution=False),
            True,
            (),
            25,
            id="toolCalls-with-no-enabled-tools",
        ),
        pytest.param(
            GatePolicy(confirm_tool_calls=True, confirm_code_execution=True),
            True,
            (),
            25,
            id="both-flags-with-no-enabled-tools",
        ),
        pytest.param(
            GatePolicy(confirm_tool_calls=False, confirm_code_execution=False),
            True,
            ALL_TOOLS,
            25,
            id="no-confirmation-flag",
        ),
    ],
)
def test_request_that_can_never_prompt_is_not_refused(
    policy: GatePolicy, tools_enabled: bool, enabled_tools: tuple[str, ...], max_tool_calls: int
) -> None:
    flag = unwireable_flag(
        policy,
        tools_enabled=tools_enabled,
        enabled_tools=tools(enabled_tools),
        max_tool_calls=max_tool_calls,
    )
    assert flag is None


@pytest.mark.parametrize(
    ("policy", "enabled_tools", "flag"),
    [
        pytest.param(GatePolicy(), ALL_TOOLS, "confirmCodeExecution", id="default-all-tools"),
        pytest.param(GatePolicy(), ("python",), "confirmCodeExecution", id="only-python"),
        pytest.param(
            GatePolicy(), ("terminal", "read_file"), "confirmCodeExecution", id="terminal+file"
        ),
        pytest.param(
            GatePolicy(confirm_tool_calls=True, confirm_code_execution=False),
            ("read_file",),
            "confirmToolCalls",
            id="toolCalls-file-tool-only",
        ),
        pytest.param(
            GatePolicy(confirm_tool_calls=True, confirm_code_execution=True),
            ALL_TOOLS,
            "confirmToolCalls",
            id="both-prompt-toolCalls-wins",
        ),
        pytest.param(
            GatePolicy(confirm_tool_calls=True, confirm_code_execution=True),
            ("python",),
            "confirmToolCalls",
            id="both-prompt-on-python-toolCalls-wins",
        ),
    ],
)
def test_request_that_would_prompt_is_refused_naming_the_flag(
    policy: GatePolicy, enabled_tools: tuple[str, ...], flag: str
) -> None:
    assert (
        unwireable_flag(
            policy, tools_enabled=True, enabled_tools=tools(enabled_tools), max_tool_calls=1
        )
        == flag
    )


@pytest.mark.parametrize(("ctc", "cce", "bypass", "name", "expected"), TRUTH_TABLE)
def test_with_no_rules_that_match_the_decision_order_asks_exactly_when_the_seed_rule_says_so(
    ctc: bool, cce: bool, bypass: bool, name: str, expected: bool
) -> None:
    # The rules' decision order (engine/rules/policy.py) keeps the seed's gate: built-in rules
    # and rules for other tools or commands change nothing.
    from engine.rules.book import RuleBook
    from engine.rules.model import Rule
    from engine.rules.policy import decide
    from engine.rules.store import BUILTIN_RULES

    policy = GatePolicy(
        confirm_tool_calls=ctc, confirm_code_execution=cce, bypass_permissions=bypass
    )
    unrelated = RuleBook([*BUILTIN_RULES, Rule("allow", "terminal", "make *")]).index
    args = {"python": {"code": "print(1)"}, "terminal": {"command": "ls"}}.get(name, {"path": "a"})
    verdict = decide(policy, BUILTIN_TOOLS[name], args, unrelated, "0" * 64)
    assert (verdict.outcome == "ask") is expected
    assert verdict.outcome != "deny"
