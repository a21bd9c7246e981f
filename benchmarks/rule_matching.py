"""Rule matching: what deciding one call costs with 500 rules (goal: at most 1 ms per call).

Per call, :func:`engine.rules.policy.decide` as the agent loop calls it: the command line parsed
(tree-sitter-bash and the plain-shell tokenizer, the analysis cache cleared first, so every call
is a line never seen before), then matched against 500 rules (400 allow, 50 deny and 25 ask
terminal rules over 200 programs, 25 read_file path globs), and the verdict with its choices.
Twenty command lines from the corpus: plain, compound, nested (``$( )``, ``sh -c``), path tools.

Compared in the same run with:

- the same 500 rules matched by a linear scan (every rule tried against every command): what an
  index saves;
- the seed's check for an allowed call (``name in allowed_tools``): the floor;
- parsing alone (tree-sitter-bash and the tokenizer), and matching alone (analysis cached).

    .venv/bin/python benchmarks/rule_matching.py [--quick] [--json PATH]
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import _common as c

from engine.gate import GatePolicy
from engine.rules.book import RuleBook
from engine.rules.matching import _broad_match, _words_match, subject_for
from engine.rules.model import CommandPattern, Rule
from engine.rules.policy import decide
from engine.rules.shell import analyse
from engine.rules.words import read_words
from engine.tools import BUILTIN_TOOLS

COMMANDS = [
    "pytest -q",
    "pytest -q tests/unit && git status",
    "npm test -- --watch",
    "git diff HEAD | cat",
    "ls -la src",
    "make test > build/log.txt 2>&1",
    "pytest -q && curl http://127.0.0.1:1/x | sh",
    "echo $(curl http://x)",
    "sh -c 'curl x | sh'",
    "find . -name '*.py' -exec grep -n TODO {} +",
    "git -c core.sshCommand='touch x' fetch",
    "tool17 sub -v --flag value && tool42 run",
    "tool199 build --release",
    "cat README.md | grep -n rules",
    "PYTHONPATH=src pytest",
    "cargo build --release && cargo test",
    "rm -rf build",
    "echo 'a;b' \"c d\"",
    "python -c 'print(1)'",
    "tool3 deploy --prod",
]
PATHS = ["src/main.py", "docs/readme.md", "../outside", "src/a/b/c/d.py", ".env"]


def rules_500() -> list[Rule]:
    rules: list[Rule] = []
    for i in range(400):
        rules.append(Rule("allow", "terminal", f"tool{i % 200} sub{i // 200} *"))
    for i in range(50):
        rules.append(Rule("deny", "terminal", f"bad{i} *"))
    for i in range(25):
        rules.append(Rule("ask", "terminal", f"tool{i * 7} deploy *"))
    for i in range(25):
        rules.append(Rule("allow", "read_file", f"dir{i}/**"))
    rules[0] = Rule("allow", "terminal", "pytest *")
    rules[1] = Rule("deny", "terminal", "curl *")
    return rules


def linear_match(rules: list[Rule], command: str) -> tuple[list[Rule], list[Rule], bool]:
    """The same answers as the index, by trying every rule on every command (no index)."""
    analysis = analyse(command)
    deny, ask = [], []
    for rule in rules:
        pattern = rule.compiled
        if rule.tool != "terminal" or not isinstance(pattern, CommandPattern):
            continue
        if rule.action in ("deny", "ask"):
            for argv in analysis.found:
                if _broad_match(pattern, argv):
                    (deny if rule.action == "deny" else ask).append(rule)
                    break
    allowed = analysis.understood and all(
        any(
            r.action == "allow"
            and isinstance(r.compiled, CommandPattern)
            and _words_match(r.compiled.words, r.compiled.open_ended, argv)
            for r in rules
        )
        for argv in analysis.commands
    )
    return deny, ask, allowed


def per_call(fn: Callable[[Any], object], items: list[Any], rounds: int) -> list[float]:
    """Microseconds per call of ``fn`` over ``items``, one sample per round."""
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        for item in items:
            fn(item)
        samples.append((time.perf_counter() - start) / len(items) * 1e6)
    return samples


def run(quick: bool) -> dict[str, Any]:
    rounds = 30 if quick else 200
    rules = rules_500()
    book = RuleBook(rules)
    index = book.index
    policy = GatePolicy()
    terminal, read_file = BUILTIN_TOOLS["terminal"], BUILTIN_TOOLS["read_file"]
    digest = "0" * 64
    analyse("warm up")  # load tree-sitter once

    def decide_fresh(command: str) -> object:
        analyse.cache_clear()
        return decide(policy, terminal, {"command": command}, index, digest)

    def decide_cached(command: str) -> object:
        return decide(policy, terminal, {"command": command}, index, digest)

    def parse_only(command: str) -> object:
        analyse.cache_clear()
        return analyse(command)

    def linear(command: str) -> object:
        return linear_match(rules, command)

    allowed_tools = {"python"}

    def seed(command: str) -> object:
        return "terminal" in allowed_tools

    def path_call(path: str) -> object:
        return decide(policy, read_file, {"path": path}, index, digest)

    for command in COMMANDS:  # both matchers give the same answers
        analyse(command)
        m = index.match(subject_for("terminal", {"command": command}))
        deny, ask, allowed = linear_match(rules, command)
        assert set(m.deny) == set(deny) and set(m.ask) == set(ask), command
        assert (m.allow is not None) == allowed, command

    results = {
        "decide, new line (parse + match 500 rules)": per_call(decide_fresh, COMMANDS, rounds),
        "decide, line seen before (match 500 rules)": per_call(decide_cached, COMMANDS, rounds),
        "parse only (tree-sitter + tokenizer)": per_call(parse_only, COMMANDS, rounds),
        "linear scan of 500 rules (line seen before)": per_call(linear, COMMANDS, rounds),
        "seed: name in allowed_tools": per_call(seed, COMMANDS, rounds),
        "decide, read_file path (25 globs)": per_call(path_call, PATHS, rounds),
        "tokenizer alone": per_call(read_words, COMMANDS, rounds),
    }
    return {
        "machine": c.machine(),
        "rules": len(rules),
        "commands": len(COMMANDS),
        "rounds": rounds,
        "us_per_call": {name: c.summary(s) for name, s in results.items()},
    }


def report(result: dict[str, Any]) -> str:
    rows = []
    figures = result["us_per_call"]
    for name, s in figures.items():
        rows.append([name, f"{s['median']:.1f} us", f"{s['p90']:.1f} us"])
    fresh = figures["decide, new line (parse + match 500 rules)"]["median"]
    cached = figures["decide, line seen before (match 500 rules)"]["median"]
    linear = figures["linear scan of 500 rules (line seen before)"]["median"]
    lines = [
        f"{result['rules']} rules, {result['commands']} command lines, {result['rounds']} rounds",
        c.table("rule matching", ["per call", "median", "p90"], rows),
        f"goal <= 1000 us per call: {'met' if fresh <= 1000 else 'NOT met'} ({fresh:.0f} us)",
        f"indexed / linear scan (matching only): {cached / linear:.2f}x",
    ]
    return "\n".join(lines)


def main() -> int:
    return c.script_main(__doc__, run, report)


if __name__ == "__main__":
    raise SystemExit(main())
