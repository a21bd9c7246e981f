"""The streaming tool-call parser: what a user sees stream, and which calls the agent gets."""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence

import pytest

from engine.toolcalls import ArgsPreview, ParsedToolCall, ParseEvent, TextPiece, ToolCallParser

# -- helpers ----------------------------------------------------------------------------------


def merged(events: Iterable[ParseEvent]) -> list[ParseEvent]:
    """Events with adjacent TextPieces of one kind (and previews of one call) joined."""
    out: list[ParseEvent] = []
    for ev in events:
        last = out[-1] if out else None
        if isinstance(ev, TextPiece) and isinstance(last, TextPiece) and last.kind == ev.kind:
            out[-1] = TextPiece(ev.kind, last.text + ev.text)
        elif (
            isinstance(ev, ArgsPreview) and isinstance(last, ArgsPreview) and last.index == ev.index
        ):
            out[-1] = ArgsPreview(ev.index, last.text + ev.text)
        else:
            out.append(ev)
    return out


def feed_chunks(chunks: Sequence[str], *, tools_enabled: bool = True) -> list[ParseEvent]:
    """All events (unmerged) from feeding ``chunks`` then finishing."""
    parser = ToolCallParser(tools_enabled=tools_enabled)
    events: list[ParseEvent] = []
    for chunk in chunks:
        events += parser.feed(chunk)
    events += parser.finish()
    return events


def random_chunks(text: str, seed: int) -> list[str]:
    rng = random.Random(seed)
    chunks, pos = [], 0
    while pos < len(text):
        size = rng.randint(1, 9)
        chunks.append(text[pos : pos + size])
        pos += size
    return chunks


def parse(text: str, *, tools_enabled: bool = True) -> list[ParseEvent]:
    """Merged events for ``text`` fed whole."""
    return merged(feed_chunks([text], tools_enabled=tools_enabled))


def content(events: Iterable[ParseEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextPiece) and e.kind == "content")


def reasoning(events: Iterable[ParseEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextPiece) and e.kind == "reasoning")


def calls(events: Iterable[ParseEvent]) -> list[ParsedToolCall]:
    return [e for e in events if isinstance(e, ParsedToolCall)]


LS_CALL = '<tool_call>{"name": "terminal", "arguments": {"command": "ls"}}</tool_call>'

SAMPLES = [
    "Just a plain answer, no tools.",
    "a < b and c > d, <b>bold</b>, x<tool and <tool_callx>",
    f"Let me look.\n{LS_CALL}\nDone.",
    f"{LS_CALL}{LS_CALL}",
    '<tool_call>\n{"name": "read_file", "arguments": {"path": "a.py"}}\n</tool_call>',
    '<tool_call>{"name": "terminal", "arguments": {"command": "ls"}} oops</tool_call> after',
    '<tool_call>{"name": "terminal", "arguments": {"command": "ls"}}',
    '<tool_call>{"name": "a", "arguments": {}}\n<tool_call>{"name": "b", "arguments": {}}',
    '<tool_call>{"name": "terminal", "arguments": {"command": "ls"</tool_call>',
    '<think>I should list files.</think>\n<tool_call>{"name": "x", "arguments": {}}</tool_call>',
    "<think>unclosed reasoning that never ends",
    '  {"name": "terminal", "arguments": {"command": "ls -la"}}  \n',
    '[{"name": "a", "arguments": {}}, {"name": "b", "parameters": {"k": 1}}]',
    '{"answer": 42}',
    '{"answer": "<tool_call>not a call</tool_call>"}',
    '{"unfinished": [1, 2',
    "[link](http://example.com) and then <tool_call>{}</tool_call>",
    '<think>hm</think>\n\n{"name": "terminal", "arguments": {"command": "pwd"}}',
    "",
    "   \n",
    'Here it is: {"name": "a", "arguments": {}}',
    'Sure.\n[{"name": "a", "arguments": {}}]',
    "ends with a partial tag <tool_c",
    "ends with a partial close <think>abc</thi",
]


# -- chunking never changes the result --------------------------------------------------------


@pytest.mark.parametrize("tools_enabled", [True, False])
@pytest.mark.parametrize("text", SAMPLES)
def test_same_events_whatever_the_delta_sizes(text: str, tools_enabled: bool) -> None:
    whole = merged(feed_chunks([text], tools_enabled=tools_enabled))
    assert merged(feed_chunks(list(text), tools_enabled=tools_enabled)) == whole
    for seed in range(5):
        chunks = random_chunks(text, seed)
        assert merged(feed_chunks(chunks, tools_enabled=tools_enabled)) == whole


FRAGMENTS = [
    "<tool_call>", "</tool_call>", "<think>", "</think>", "<tool", "</th", "<", ">",
    "{", "}", "[", "]", '"', "\\", ",", " ", "\n", "abc",
    '{"name": "t", "arguments": {"a": 1}}',
]  # fmt: skip


@pytest.mark.parametrize("tools_enabled", [True, False])
def test_same_events_for_random_texts_whatever_the_delta_sizes(tools_enabled: bool) -> None:
    rng = random.Random(1234)
    for n in range(300):
        text = "".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(0, 12)))
        whole = merged(feed_chunks([text], tools_enabled=tools_enabled))
        assert merged(feed_chunks(list(text), tools_enabled=tools_enabled)) == whole, text
        chunks = random_chunks(text, n)
        assert merged(feed_chunks(chunks, tools_enabled=tools_enabled)) == whole, text


@pytest.mark.parametrize("text", SAMPLES)
def test_no_empty_text_pieces_are_streamed(text: str) -> None:
    for chunks in ([text], list(text), random_chunks(text, 7)):
        for ev in feed_chunks(chunks):
            if isinstance(ev, TextPiece | ArgsPreview):
                assert ev.text


@pytest.mark.parametrize("text", SAMPLES)
def test_previews_spell_out_the_call_body(text: str) -> None:
    events = merged(feed_chunks(list(text)))
    for call in calls(events):
        preview = "".join(
            e.text for e in events if isinstance(e, ArgsPreview) and e.index == call.index
        )
        if call.raw.startswith("<tool_call>"):
            body = call.raw.removeprefix("<tool_call>").removesuffix("</tool_call>")
            assert preview == body


# -- Hermes / Qwen <tool_call> ----------------------------------------------------------------


def test_tool_call_between_text_golden() -> None:
    text = f"Let me look.\n{LS_CALL}\nDone."
    assert parse(text) == [
        TextPiece("content", "Let me look.\n"),
        ArgsPreview(0, '{"name": "terminal", "arguments": {"command": "ls"}}'),
        ParsedToolCall(0, "terminal", {"command": "ls"}, LS_CALL),
        TextPiece("content", "\nDone."),
    ]


def test_call_markup_never_reaches_content() -> None:
    text = f"Before {LS_CALL} middle {LS_CALL} after"
    for chunks in ([text], list(text), random_chunks(text, 3)):
        events = feed_chunks(chunks)
        assert content(events) == "Before  middle  after"
        assert "tool_call" not in content(events)
        assert "terminal" not in content(events)


def test_content_is_exactly_the_output_without_markup() -> None:
    text = "  lead\n<think>plan</think>x < y\n" + LS_CALL + "\n\ttail <b>ok</b>\n"
    expected = "  lead\nx < y\n\n\ttail <b>ok</b>\n"
    for chunks in ([text], list(text), random_chunks(text, 11)):
        assert content(feed_chunks(chunks)) == expected


def test_whitespace_and_newlines_inside_tags_are_fine() -> None:
    text = (
        '<tool_call>\n  {\n    "name": "read_file",\n    "arguments": {"path": "a.py"}\n  }\n'
        "</tool_call>"
    )
    [call] = calls(parse(text))
    assert (call.name, call.arguments, call.error, call.raw) == (
        "read_file",
        {"path": "a.py"},
        None,
        text,
    )


def test_several_calls_in_one_turn_are_numbered_in_order() -> None:
    text = (
        'I will do two things.<tool_call>{"name": "a", "arguments": {"n": 1}}</tool_call>'
        'then<tool_call>{"name": "b", "arguments": {"n": 2}}</tool_call>'
    )
    found = calls(parse(text))
    assert [(c.index, c.name, c.arguments) for c in found] == [
        (0, "a", {"n": 1}),
        (1, "b", {"n": 2}),
    ]
    assert content(parse(text)) == "I will do two things.then"


def test_text_after_the_json_inside_the_tags_does_not_break_the_call() -> None:
    text = (
        '<tool_call>{"name": "terminal", "arguments": {"command": "ls"}} I hope this works'
        "</tool_call>"
    )
    [call] = calls(parse(text))
    assert (call.name, call.arguments, call.error) == ("terminal", {"command": "ls"}, None)


def test_unclosed_call_is_parsed_at_end_of_turn() -> None:
    text = 'Running it.\n<tool_call>{"name": "terminal", "arguments": {"command": "ls"}}\n'
    events = parse(text)
    assert events == [
        TextPiece("content", "Running it.\n"),
        ArgsPreview(0, '{"name": "terminal", "arguments": {"command": "ls"}}\n'),
        ParsedToolCall(
            0,
            "terminal",
            {"command": "ls"},
            '<tool_call>{"name": "terminal", "arguments": {"command": "ls"}}\n',
        ),
    ]


def test_unclosed_call_followed_by_another_call_gives_both() -> None:
    text = (
        '<tool_call>{"name": "a", "arguments": {}}\n'
        '<tool_call>{"name": "b", "arguments": {}}</tool_call>'
    )
    found = calls(parse(text))
    assert [(c.index, c.name, c.error) for c in found] == [(0, "a", None), (1, "b", None)]
    assert found[0].raw == '<tool_call>{"name": "a", "arguments": {}}\n'
    assert content(parse(text)) == ""


def test_malformed_json_becomes_a_call_with_an_error_the_model_can_read() -> None:
    text = '<tool_call>{"name": "terminal" "arguments": {"command": "ls"}}</tool_call>'
    [call] = calls(parse(text))
    assert call.error == "Could not parse tool call: Expecting ',' delimiter at line 1 column 21"
    assert call.name == "terminal"  # best effort, so the model is told which call failed
    assert call.arguments == {}
    assert call.raw == text


def test_truncated_json_in_an_unclosed_call_is_an_error() -> None:
    [call] = calls(parse('<tool_call>{"name": "terminal", "arguments": {"command": "l'))
    assert call.error is not None
    assert call.error.startswith("Could not parse tool call: Unterminated string")


def test_call_without_json_is_an_error() -> None:
    [call] = calls(parse("<tool_call>terminal ls</tool_call>"))
    assert call.name == ""
    assert call.error == (
        "Could not parse tool call: no JSON object found in <tool_call>...</tool_call>"
    )


def test_arguments_given_as_a_json_string_are_decoded() -> None:
    text = '<tool_call>{"name": "terminal", "arguments": "{\\"command\\": \\"ls\\"}"}</tool_call>'
    [call] = calls(parse(text))
    assert (call.name, call.arguments, call.error) == ("terminal", {"command": "ls"}, None)


def test_arguments_string_that_is_not_an_object_is_an_error() -> None:
    [call] = calls(parse('<tool_call>{"name": "t", "arguments": "[1, 2]"}</tool_call>'))
    assert call.error == 'Could not parse tool call: "arguments" must be a JSON object, got array'
    [call] = calls(parse('<tool_call>{"name": "t", "arguments": "ls -la"}</tool_call>'))
    assert call.error == (
        'Could not parse tool call: "arguments" is a string that is not JSON: '
        "Expecting value at line 1 column 1"
    )


def test_parameters_is_accepted_for_arguments() -> None:
    [call] = calls(parse('<tool_call>{"name": "t", "parameters": {"a": 1}}</tool_call>'))
    assert (call.name, call.arguments, call.error) == ("t", {"a": 1}, None)


def test_missing_arguments_means_no_arguments() -> None:
    [call] = calls(parse('<tool_call>{"name": "git_status"}</tool_call>'))
    assert (call.name, call.arguments, call.error) == ("git_status", {}, None)


def test_arguments_that_are_a_list_are_an_error() -> None:
    [call] = calls(parse('<tool_call>{"name": "t", "arguments": [1, 2]}</tool_call>'))
    assert call.name == "t"
    assert call.arguments == {}
    assert call.error == 'Could not parse tool call: "arguments" must be a JSON object, got array'


def test_missing_or_non_string_name_is_an_error() -> None:
    [call] = calls(parse('<tool_call>{"arguments": {"a": 1}}</tool_call>'))
    assert call.name == ""
    assert call.error is not None
    assert call.error.startswith('Could not parse tool call: missing "name"')
    [call] = calls(parse('<tool_call>{"name": 3, "arguments": {}}</tool_call>'))
    assert call.name == ""
    assert call.error is not None
    assert call.error.startswith('Could not parse tool call: "name" must be a string, got number')


# -- live streaming and the held-back tag prefix ----------------------------------------------


def test_content_streams_live_before_the_turn_ends() -> None:
    parser = ToolCallParser()
    assert parser.feed("Hello") == [TextPiece("content", "Hello")]
    assert parser.feed(", world") == [TextPiece("content", ", world")]
    assert parser.finish() == []


def test_a_partial_tag_is_held_then_released_when_it_is_not_a_tag() -> None:
    parser = ToolCallParser()
    assert parser.feed("x<tool") == [TextPiece("content", "x")]
    assert parser.feed("bar") == [TextPiece("content", "<toolbar")]
    assert parser.finish() == []


def test_less_than_in_prose_streams_as_content() -> None:
    parser = ToolCallParser()
    assert parser.feed("a <") == [TextPiece("content", "a ")]
    assert parser.feed(" b") == [TextPiece("content", "< b")]
    assert parser.finish() == []


def test_only_the_possible_tag_start_is_held() -> None:
    parser = ToolCallParser()
    assert parser.feed("a<<tool_c") == [TextPiece("content", "a<")]
    assert parser.feed("all>") == []
    assert parser.feed('{"name": "t"}') == [ArgsPreview(0, '{"name": "t"}')]
    assert parser.feed("</tool") == []
    assert parser.feed("_call>!") == [
        ParsedToolCall(0, "t", {}, '<tool_call>{"name": "t"}</tool_call>'),
        TextPiece("content", "!"),
    ]


def test_a_partial_tag_at_the_end_of_the_turn_is_content() -> None:
    assert parse("see <tool_c") == [TextPiece("content", "see <tool_c")]


def test_call_arguments_preview_streams_while_the_call_is_written() -> None:
    parser = ToolCallParser()
    assert parser.feed('Ok <tool_call>{"name": "terminal", ') == [
        TextPiece("content", "Ok "),
        ArgsPreview(0, '{"name": "terminal", '),
    ]
    assert parser.feed('"arguments": {}}</tool_') == [ArgsPreview(0, '"arguments": {}}')]
    assert parser.feed("call>") == [
        ParsedToolCall(
            0, "terminal", {}, '<tool_call>{"name": "terminal", "arguments": {}}</tool_call>'
        )
    ]


# -- <think> blocks ---------------------------------------------------------------------------


def test_think_block_streams_as_reasoning_live() -> None:
    parser = ToolCallParser()
    assert parser.feed("<think>Let me") == [TextPiece("reasoning", "Let me")]
    assert parser.feed(" think.</th") == [TextPiece("reasoning", " think.")]
    assert parser.feed("ink>The answer.") == [TextPiece("content", "The answer.")]
    assert parser.finish() == []


def test_think_then_call_golden() -> None:
    text = (
        '<think>I should list files.</think>\n<tool_call>{"name": "x", "arguments": {}}</tool_call>'
    )
    assert parse(text) == [
        TextPiece("reasoning", "I should list files."),
        TextPiece("content", "\n"),
        ArgsPreview(0, '{"name": "x", "arguments": {}}'),
        ParsedToolCall(0, "x", {}, '<tool_call>{"name": "x", "arguments": {}}</tool_call>'),
    ]


def test_call_markup_inside_reasoning_is_only_reasoning() -> None:
    text = f"<think>maybe {LS_CALL}?</think>no."
    assert parse(text) == [
        TextPiece("reasoning", f"maybe {LS_CALL}?"),
        TextPiece("content", "no."),
    ]


def test_unclosed_think_is_all_reasoning() -> None:
    assert parse("<think>still thinking </th") == [TextPiece("reasoning", "still thinking </th")]


# -- bare JSON turns --------------------------------------------------------------------------


def test_bare_json_turn_is_a_call() -> None:
    raw = '{"name": "terminal", "arguments": {"command": "ls -la"}}'
    assert parse(f"  {raw}\n") == [ParsedToolCall(0, "terminal", {"command": "ls -la"}, raw)]


def test_bare_json_list_is_several_calls() -> None:
    text = '[{"name": "a", "arguments": {}},\n {"name": "b", "parameters": {"k": 1}}]'
    assert parse(text) == [
        ParsedToolCall(0, "a", {}, '{"name": "a", "arguments": {}}'),
        ParsedToolCall(1, "b", {"k": 1}, '{"name": "b", "parameters": {"k": 1}}'),
    ]


def test_bare_json_is_held_until_the_turn_ends() -> None:
    parser = ToolCallParser()
    assert parser.feed('{"name": "terminal", ') == []
    assert parser.feed('"arguments": {"command": "ls"}}') == []
    assert parser.finish() == [
        ParsedToolCall(
            0, "terminal", {"command": "ls"}, '{"name": "terminal", "arguments": {"command": "ls"}}'
        )
    ]


def test_bare_json_after_thinking_is_a_call() -> None:
    raw = '{"name": "terminal", "arguments": {"command": "pwd"}}'
    text = f"<think>hm</think>\n\n{raw}"
    assert parse(text) == [
        TextPiece("reasoning", "hm"),
        ParsedToolCall(0, "terminal", {"command": "pwd"}, raw),
    ]


def test_bare_json_with_bad_arguments_is_a_call_with_an_error() -> None:
    [call] = parse('{"name": "terminal", "arguments": ["ls"]}')
    assert isinstance(call, ParsedToolCall)
    assert call.error == 'Could not parse tool call: "arguments" must be a JSON object, got array'


@pytest.mark.parametrize(
    "text",
    [
        '{"answer": 42}',
        ' {"name": "Bob", "age": 3}\n',
        '{"name": "git_status"}',
        "[]",
        "[1, 2, 3]",
        '{"unfinished": [1, 2',
        '{"answer": "<tool_call>not a call</tool_call>"}',
        '{"name": "a", "arguments": {}} and some words',
    ],
)
def test_json_that_is_not_a_call_comes_back_as_content(text: str) -> None:
    assert parse(text) == [TextPiece("content", text)]


def test_text_starting_with_a_bracket_streams_once_it_is_not_json() -> None:
    parser = ToolCallParser()
    assert parser.feed("[link]") == []
    assert parser.feed("(http://x) more") == [TextPiece("content", "[link](http://x) more")]
    assert parser.finish() == []


def test_tagged_call_after_leading_json_like_text_is_still_a_call() -> None:
    text = f"{{a brace}} {LS_CALL}"
    events = parse(text)
    assert content(events) == "{a brace} "
    assert [c.name for c in calls(events)] == ["terminal"]


def test_json_after_prose_is_content_not_a_call() -> None:
    parser = ToolCallParser()
    assert parser.feed("Example: ") == [TextPiece("content", "Example: ")]
    raw = '{"name": "terminal", "arguments": {"command": "ls"}}'
    assert parser.feed(raw) == [TextPiece("content", raw)]
    assert parser.finish() == []


def test_whitespace_only_turn_is_content() -> None:
    assert parse("  \n") == [TextPiece("content", "  \n")]
    assert parse("") == []


# -- tools disabled ---------------------------------------------------------------------------


def test_with_tools_disabled_call_markup_is_plain_content() -> None:
    text = f"<think>hm</think>Sure: {LS_CALL}"
    assert parse(text, tools_enabled=False) == [
        TextPiece("reasoning", "hm"),
        TextPiece("content", f"Sure: {LS_CALL}"),
    ]


def test_with_tools_disabled_bare_json_streams_as_content() -> None:
    parser = ToolCallParser(tools_enabled=False)
    raw = '{"name": "terminal", "arguments": {}}'
    assert parser.feed(raw) == [TextPiece("content", raw)]
    assert parser.finish() == []


# -- lifecycle --------------------------------------------------------------------------------


def test_empty_deltas_are_harmless() -> None:
    parser = ToolCallParser()
    assert parser.feed("") == []
    assert parser.feed("hi") == [TextPiece("content", "hi")]
    assert parser.feed("") == []
    assert parser.finish() == []


def test_the_parser_is_done_after_finish() -> None:
    parser = ToolCallParser()
    parser.finish()
    with pytest.raises(RuntimeError):
        parser.feed("more")
    with pytest.raises(RuntimeError):
        parser.finish()
