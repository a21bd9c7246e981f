"""What a local model is shown: a system prompt describing the tools with examples in the Hermes
``<tool_call>`` format, and the conversation as chat-template messages.

Small models need help: a plain description of each tool, the exact call format, and a few
worked examples. While tools are offered, tool results go back as ``<tool_response>`` blocks in a
user turn, which every chat template can render (many small models were never trained on a
``tool`` role). The markup itself comes from :mod:`engine.toolcalls.markup`.

A model turn with no tools offered (the answer after a small model's round of calls, or a request
without tools) is shown no tool markup at all: the calls are told in words ("I ran `wc -l *.py`
in the terminal.") and their results come back as what they printed, in a fence, followed by
:data:`ANSWER_FROM_RESULTS`. A 135M-parameter model imitates what it sees; shown markup, it
answers with more markup or invented numbers, while shown plain output it copies the lines that
answer the question (``benchmarks/answer_quality.py`` measures it).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from engine.backends.base import Message, Notice, ToolSpec
from engine.toolcalls import ParsedToolCall, TextPiece, ToolCallParser
from engine.toolcalls.markup import (
    CALL_CLOSE,
    CALL_OPEN,
    RESPONSE_OPEN,
    call_markup,
    response_markup,
)

BASE_PROMPT = (
    "You are Gatehouse, a careful coding assistant working in the user's project folder. "
    "Answer briefly and precisely."
)

_CALL_FORMAT = f"""You can call tools. To call one, write exactly this and then stop:
{CALL_OPEN}
{{"name": "<tool name>", "arguments": {{<the arguments as JSON>}}}}
{CALL_CLOSE}
The result comes back in the next message, inside {RESPONSE_OPEN}. Call a tool only when you need
its result; otherwise answer directly. A person approves each command before it runs."""

_EDIT_RULE = (
    "Before you change a file, read it with read_file; a person reviews each change as a diff."
)
_EDIT_TOOLS = frozenset({"edit_file", "write_file", "apply_patch"})

_EXAMPLES: dict[str, tuple[str, dict[str, Any]]] = {
    "list_files": ("Which files are in this project?", {}),
    "terminal": ("How many lines are in each Python file?", {"command": "wc -l *.py"}),
    "python": ("What is 2 to the power of 100?", {"code": "print(2 ** 100)"}),
    "read_file": ("Show me the README.", {"path": "README.md"}),
    "search_files": ("Where is the function greet defined?", {"pattern": "def greet"}),
    "edit_file": (
        "In the README, write Hello instead of Hi.",
        {"path": "README.md", "old_text": "Hi", "new_text": "Hello"},
    ),
    "write_file": ("Create todo.txt listing 'tests'.", {"path": "todo.txt", "content": "tests\n"}),
    "apply_patch": (
        "Rename x to count in a.py.",
        {"patch": "--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x = 0\n+count = 0\n"},
    ),
}


_AFTER_RESULTS = (
    "Use this result to answer my question in plain words, or call another tool if you must."
)
ANSWER_FROM_RESULTS = "Answer my question by copying the lines that answer it."
"""The last line of the results of a round of calls when the model answers without tools."""
ANSWER_WITHOUT_RESULTS = "Tell me in one sentence that it did not run, and why."
"""The same, when none of the round's calls ran to the end."""


def _signature(spec: ToolSpec) -> str:
    props = spec.parameters.get("properties", {})
    required = set(spec.parameters.get("required", []))
    args = ", ".join(
        f'"{name}": {schema.get("type", "any")}{"" if name in required else " (optional)"}'
        for name, schema in props.items()
    )
    return f"- {spec.name}: {spec.description} Arguments: {{{args}}}"


def system_prompt(tools: Sequence[ToolSpec]) -> str:
    if not tools:
        return BASE_PROMPT
    lines = [BASE_PROMPT, "", _CALL_FORMAT, "", "Tools:"]
    lines += [_signature(spec) for spec in tools]
    if any(spec.name in _EDIT_TOOLS for spec in tools):
        lines += ["", _EDIT_RULE]
    examples = [(n, _EXAMPLES[n]) for n in (t.name for t in tools) if n in _EXAMPLES][:3]
    if examples:
        lines += ["", "Examples:"]
        for name, (question, arguments) in examples:
            lines += [f"User: {question}", f"Assistant: {call_markup(name, arguments)}", ""]
    return "\n".join(lines).rstrip()


def chat_messages(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> list[dict[str, str]]:
    """The conversation as chat-template messages, with the system prompt first."""
    if not tools and any(m.role == "tool" for m in messages):
        return _narrated(messages)
    rendered = [{"role": "system", "content": system_prompt(tools)}]
    for message in messages:
        if message.role == "system":
            continue  # the system prompt is ours
        if message.role == "tool":
            body = response_markup(message.name, message.content.rstrip())
            previous = rendered[-1]
            if previous["role"] == "user" and previous["content"].startswith(RESPONSE_OPEN):
                # Several results of one turn go into one message, before the closing line.
                head, _, _ = previous["content"].rpartition("\n\n")
                previous["content"] = f"{head}\n{body}\n\n{_AFTER_RESULTS}"
            else:
                rendered.append({"role": "user", "content": f"{body}\n\n{_AFTER_RESULTS}"})
            continue
        rendered.append({"role": message.role, "content": message.content})
    return rendered


def _is_results(message: dict[str, str]) -> bool:
    content = message["content"]
    return message["role"] == "user" and (
        content.startswith(RESPONSE_OPEN)
        or content.endswith((ANSWER_FROM_RESULTS, ANSWER_WITHOUT_RESULTS))
    )


# --- the conversation in words, for a turn without tools -------------------------------------


def _narrated(messages: Sequence[Message]) -> list[dict[str, str]]:
    rendered = [{"role": "system", "content": BASE_PROMPT}]
    i = 0
    while i < len(messages):
        message = messages[i]
        i += 1
        if message.role == "system":
            continue
        if message.role != "assistant":
            if message.role == "tool":  # a result with no call before it
                body = narrate_result(message.name or "a tool", {}, message)
                ran = message.status in (None, "completed")
                instruction = ANSWER_FROM_RESULTS if ran else ANSWER_WITHOUT_RESULTS
                rendered.append({"role": "user", "content": f"{body}\n{instruction}"})
            else:
                rendered.append({"role": message.role, "content": message.content})
            continue
        results: list[Message] = []
        while i < len(messages) and messages[i].role == "tool":
            results.append(messages[i])
            i += 1
        text, calls = _split(message.content)
        told = [narrate_call(c.name, c.arguments) for c in calls if not c.error]
        content = " ".join(part for part in (text.strip(), *told) if part)
        rendered.append({"role": "assistant", "content": content or "(no answer)"})
        if results:
            bodies = []
            for n, result in enumerate(results):
                call = calls[n] if n < len(calls) else None
                name = call.name if call and call.name else result.name or "a tool"
                bodies.append(narrate_result(name, call.arguments if call else {}, result))
            ran = any(r.status in (None, "completed") for r in results)
            instruction = ANSWER_FROM_RESULTS if ran else ANSWER_WITHOUT_RESULTS
            rendered.append({"role": "user", "content": "\n".join(bodies) + "\n" + instruction})
    return rendered


def _split(raw: str) -> tuple[str, list[ParsedToolCall]]:
    """A raw assistant turn's visible text (no markup, no reasoning) and its calls."""
    parser = ToolCallParser()
    events = parser.feed(raw) + parser.finish()
    text = "".join(e.text for e in events if isinstance(e, TextPiece) and e.kind == "content")
    return text, [e for e in events if isinstance(e, ParsedToolCall)]


def _argument(arguments: dict[str, Any], key: str) -> str:
    value = arguments.get(key)
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def narrate_call(name: str, arguments: dict[str, Any]) -> str:
    """A call told in words, as the model's own turn."""
    if name == "terminal":
        return f"I ran `{_argument(arguments, 'command')}` in the terminal."
    if name == "python":
        return f"I ran this Python code:\n```python\n{_argument(arguments, 'code')}\n```"
    if name == "read_file":
        return f"I read {_argument(arguments, 'path')}."
    if name == "list_files":
        where = arguments.get("path")
        return f"I listed the files in {where}." if where else "I listed the project's files."
    if name == "search_files":
        return f"I searched the project for `{_argument(arguments, 'pattern')}`."
    if name in ("edit_file", "write_file"):
        return f"I changed {_argument(arguments, 'path')}."
    if name == "apply_patch":
        return "I applied a patch."
    return f"I called {name} with {json.dumps(arguments, ensure_ascii=False)}."


def narrate_result(name: str, arguments: dict[str, Any], result: Message) -> str:
    """A tool result told as what it printed (in a fence), or why it did not run."""
    subjects = {
        "terminal": f"The command `{_argument(arguments, 'command')}`",
        "python": "The Python code",
        "read_file": f"Reading {_argument(arguments, 'path')}",
        "list_files": "Listing the files",
        "search_files": f"The search for `{_argument(arguments, 'pattern')}`",
        "edit_file": f"Changing {_argument(arguments, 'path')}",
        "write_file": f"Writing {_argument(arguments, 'path')}",
        "apply_patch": "The patch",
    }
    subject = subjects.get(name, f"The tool {name}")
    output = result.content.rstrip()
    if result.status not in (None, "completed"):
        verbs = {"failed": "failed", "cancelled": "was cancelled"}
        return f"{subject} {verbs.get(result.status, 'was not run')}: {output}"
    leads = {
        "terminal": f"{subject} printed:",
        "python": f"{subject} printed:",
        "read_file": f"{_argument(arguments, 'path')} contains:",
        "list_files": "The files are:",
        "search_files": f"{subject} found:",
        "edit_file": f"{subject} worked:",
        "write_file": f"{subject} worked:",
        "apply_patch": f"{subject} worked:",
    }
    return f"{leads.get(name, f'{subject} returned:')}\n```\n{output}\n```"


def fit_to_context(
    chat: Sequence[dict[str, str]], fits: Callable[[list[dict[str, str]]], bool]
) -> tuple[list[dict[str, str]], int]:
    """Leave out the oldest messages until ``fits`` says the chat fits the context window: never
    the system prompt, never the user's latest prompt and what follows it (the current turn,
    including its tool results). Returns the chat and how many messages were left out."""
    kept = list(chat)
    dropped = 0
    while not fits(kept):
        prompts = [i for i, m in enumerate(kept) if m["role"] == "user" and not _is_results(m)]
        current = prompts[-1] if prompts else len(kept) - 1
        if current <= 1:
            break  # only the system prompt and the current turn are left
        del kept[1]
        dropped += 1
    return kept, dropped


def context_notice(context: int | None, dropped: int) -> Notice:
    return Notice(
        f"The conversation outgrew the model's context ({context} tokens): "
        f"the {dropped} oldest message(s) were left out."
    )
