"""What a local model is shown: a system prompt describing the tools with examples in the Hermes
``<tool_call>`` format, and the conversation as chat-template messages.

Small models need help: a plain description of each tool, the exact call format, and a few
worked examples. Tool results go back as ``<tool_response>`` blocks in a user turn, which every
chat template can render (many small models were never trained on a ``tool`` role). The markup
itself comes from :mod:`engine.toolcalls.markup`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from engine.backends.base import Message, Notice, ToolSpec
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

_EXAMPLES: dict[str, tuple[str, dict[str, Any]]] = {
    "list_files": ("Which files are in this project?", {}),
    "terminal": ("How many lines are in each Python file?", {"command": "wc -l *.py"}),
    "python": ("What is 2 to the power of 100?", {"code": "print(2 ** 100)"}),
    "read_file": ("Show me the README.", {"path": "README.md"}),
    "search_files": ("Where is the function greet defined?", {"pattern": "def greet"}),
}


_AFTER_RESULTS = (
    "Use this result to answer my question in plain words, or call another tool if you must."
)


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
    examples = [(n, _EXAMPLES[n]) for n in (t.name for t in tools) if n in _EXAMPLES][:3]
    if examples:
        lines += ["", "Examples:"]
        for name, (question, arguments) in examples:
            lines += [f"User: {question}", f"Assistant: {call_markup(name, arguments)}", ""]
    return "\n".join(lines).rstrip()


def chat_messages(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> list[dict[str, str]]:
    """The conversation as chat-template messages, with the system prompt first."""
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


def fit_to_context(
    chat: Sequence[dict[str, str]], fits: Callable[[list[dict[str, str]]], bool]
) -> tuple[list[dict[str, str]], int]:
    """Leave out the oldest messages until ``fits`` says the chat fits the context window: never
    the system prompt, never the user's latest prompt and what follows it (the current turn,
    including its tool results). Returns the chat and how many messages were left out."""
    kept = list(chat)
    dropped = 0
    while not fits(kept):
        prompts = [
            i
            for i, m in enumerate(kept)
            if m["role"] == "user" and not m["content"].startswith(RESPONSE_OPEN)
        ]
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
