"""Tool-call markup of each model family, as real models write it, through the streaming parser.

Every golden text is checked fed whole, character by character and in random chunks.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from engine.toolcalls import ArgsPreview, ParsedToolCall, ParseEvent, TextPiece, ToolCallParser
from tests.unit.test_toolcalls import calls, content, feed_chunks, merged, random_chunks

# DeepSeek's special tokens use U+FF5C (fullwidth vertical line) and U+2581 (lower one eighth
# block); spelled with escapes so the source stays plain ASCII.
CALLS_BEGIN = "<\uff5ctool\u2581calls\u2581begin\uff5c>"
CALLS_END = "<\uff5ctool\u2581calls\u2581end\uff5c>"
CALL_BEGIN = "<\uff5ctool\u2581call\u2581begin\uff5c>"
CALL_END = "<\uff5ctool\u2581call\u2581end\uff5c>"
SEP = "<\uff5ctool\u2581sep\uff5c>"

LS = {"command": "ls -la"}


def streamed(text: str, *, tools_enabled: bool = True) -> list[ParseEvent]:
    """Merged events for ``text``, after checking they are the same fed whole, one character
    at a time and in random chunks."""
    whole = merged(feed_chunks([text], tools_enabled=tools_enabled))
    assert merged(feed_chunks(list(text), tools_enabled=tools_enabled)) == whole
    for seed in range(5):
        chunks = random_chunks(text, seed)
        assert merged(feed_chunks(chunks, tools_enabled=tools_enabled)) == whole, chunks
    return whole


def call(index: int, name: str, arguments: dict[str, Any], raw: str) -> ParsedToolCall:
    return ParsedToolCall(index, name, arguments, raw)


def only_call(text: str) -> ParsedToolCall:
    [found] = calls(streamed(text))
    return found


# -- golden texts: (text, expected events) ----------------------------------------------------

HERMES = '<tool_call>\n{"name": "read_file", "arguments": {"path": "src/main.py"}}\n</tool_call>'
FENCED = '```json\n{"name": "terminal", "arguments": {"command": "ls -la"}}\n```'
PYTHON_TAG_JSON = '{"name": "terminal", "parameters": {"command": "ls -la"}}'
QWEN_XML = (
    "<tool_call>\n<function=terminal>\n<parameter=command>\nls -la\n</parameter>\n"
    "</function>\n</tool_call>"
)
TOOL_CODE = '```tool_code\nterminal(command="ls -la")\n```'
FUNCTION_GEMMA = (
    "<start_function_call>call:terminal{command:<escape>ls -la<escape>}<end_function_call>"
)
DS_V3_CALL = f'{CALL_BEGIN}function{SEP}terminal\n```json\n{{"command": "ls -la"}}\n```{CALL_END}'
DS_V31_CALL = f'{CALL_BEGIN}terminal{SEP}{{"command": "ls -la"}}{CALL_END}'

GOLDEN: list[Any] = [
    pytest.param(
        f"I'll read it.\n{HERMES}",
        [
            TextPiece("content", "I'll read it.\n"),
            ArgsPreview(0, '\n{"name": "read_file", "arguments": {"path": "src/main.py"}}\n'),
            call(0, "read_file", {"path": "src/main.py"}, HERMES),
        ],
        id="hermes",
    ),
    pytest.param(
        PYTHON_TAG_JSON,
        [call(0, "terminal", LS, PYTHON_TAG_JSON)],
        id="llama-plain-json",
    ),
    pytest.param(
        f"Let me list the files.\n\n{FENCED}\n",
        [
            TextPiece("content", "Let me list the files.\n\n"),
            call(0, "terminal", LS, FENCED),
            TextPiece("content", "\n"),
        ],
        id="fenced-json-after-text",
    ),
    pytest.param(
        '```tool_call\n{"name": "git_status", "arguments": {}}\n```',
        [
            ArgsPreview(0, '{"name": "git_status", "arguments": {}}\n'),
            call(0, "git_status", {}, '```tool_call\n{"name": "git_status", "arguments": {}}\n```'),
        ],
        id="fenced-tool_call",
    ),
    pytest.param(
        f"<|python_tag|>{PYTHON_TAG_JSON}<|eom_id|>",
        [
            ArgsPreview(0, PYTHON_TAG_JSON),
            call(0, "terminal", LS, f"<|python_tag|>{PYTHON_TAG_JSON}<|eom_id|>"),
        ],
        id="llama-python-tag",
    ),
    pytest.param(
        '[TOOL_CALLS][{"name": "terminal", "arguments": {"command": "ls -la"}}]',
        [
            ArgsPreview(0, '[{"name": "terminal", "arguments": {"command": "ls -la"}}]'),
            call(
                0,
                "terminal",
                LS,
                '[TOOL_CALLS][{"name": "terminal", "arguments": {"command": "ls -la"}}]',
            ),
        ],
        id="mistral-v3",
    ),
    pytest.param(
        'Checking.[TOOL_CALLS]terminal[ARGS]{"command": "ls -la"}',
        [
            TextPiece("content", "Checking."),
            ArgsPreview(0, 'terminal[ARGS]{"command": "ls -la"}'),
            call(0, "terminal", LS, '[TOOL_CALLS]terminal[ARGS]{"command": "ls -la"}'),
        ],
        id="mistral-args",
    ),
    pytest.param(
        QWEN_XML,
        [
            ArgsPreview(0, QWEN_XML.removeprefix("<tool_call>").removesuffix("</tool_call>")),
            call(0, "terminal", LS, QWEN_XML),
        ],
        id="qwen3-coder-xml",
    ),
    pytest.param(
        TOOL_CODE,
        [ArgsPreview(0, 'terminal(command="ls -la")\n'), call(0, "terminal", LS, TOOL_CODE)],
        id="gemma-tool_code",
    ),
    pytest.param(
        FUNCTION_GEMMA,
        [
            ArgsPreview(0, "call:terminal{command:<escape>ls -la<escape>}"),
            call(0, "terminal", LS, FUNCTION_GEMMA),
        ],
        id="function-gemma",
    ),
    pytest.param(
        f"<think>The user wants a listing.</think>\n\n{CALLS_BEGIN}{DS_V3_CALL}{CALLS_END}",
        [
            TextPiece("reasoning", "The user wants a listing."),
            TextPiece("content", "\n\n"),
            ArgsPreview(0, f'function{SEP}terminal\n```json\n{{"command": "ls -la"}}\n```'),
            call(0, "terminal", LS, DS_V3_CALL),
        ],
        id="deepseek-v3",
    ),
    pytest.param(
        f"{CALLS_BEGIN}{DS_V31_CALL}{CALLS_END}",
        [
            ArgsPreview(0, f'terminal{SEP}{{"command": "ls -la"}}'),
            call(0, "terminal", LS, DS_V31_CALL),
        ],
        id="deepseek-v3.1",
    ),
]


@pytest.mark.parametrize(("text", "expected"), GOLDEN)
def test_golden_outputs(text: str, expected: list[ParseEvent]) -> None:
    assert streamed(text) == expected


@pytest.mark.parametrize(("text", "expected"), GOLDEN)
def test_golden_outputs_are_plain_content_with_tools_disabled(
    text: str, expected: list[ParseEvent]
) -> None:
    events = streamed(text, tools_enabled=False)
    assert calls(events) == []
    shown = "".join(e.text for e in events if isinstance(e, TextPiece))
    assert shown == text.replace("<think>", "").replace("</think>", "")


def test_hermes_block_holding_a_json_list_gives_every_call() -> None:
    first, second = '{"name": "a", "arguments": {}}', '{"name": "b", "arguments": {"k": 1}}'
    found = calls(streamed(f"<tool_call>[{first}, {second}]</tool_call>"))
    assert found == [call(0, "a", {}, first), call(1, "b", {"k": 1}, second)]


# -- 3. fenced JSON ---------------------------------------------------------------------------


def test_fence_without_language_holding_a_call_is_a_call() -> None:
    text = '```\n{"name": "terminal", "arguments": {"command": "ls -la"}}\n```'
    assert streamed(text) == [call(0, "terminal", LS, text)]


def test_fenced_list_is_several_calls() -> None:
    text = '```json\n[{"name": "a", "arguments": {}}, {"name": "b", "arguments": {"k": 1}}]\n```'
    assert streamed(text) == [
        call(0, "a", {}, '{"name": "a", "arguments": {}}'),
        call(1, "b", {"k": 1}, '{"name": "b", "arguments": {"k": 1}}'),
    ]


def test_fenced_call_without_closing_fence_is_a_call_at_end_of_turn() -> None:
    text = 'Running:\n```json\n{"name": "terminal", "arguments": {"command": "ls -la"}}\n'
    events = streamed(text)
    assert content(events) == "Running:\n"
    assert calls(events) == [call(0, "terminal", LS, text.removeprefix("Running:\n"))]


@pytest.mark.parametrize(
    "text",
    [
        'Config:\n```json\n{"port": 8080, "debug": true}\n```\nDone.',
        '```json\n{"name": "gatehouse", "version": "0.1.0"}\n```',
        '```json\n{"name": "terminal", "arguments": {}}\nand some notes\n```\n',
        '```json\n{"name": "terminal", "arguments": {"command": "ls"\n```\n',
        "```json\n[1, 2, 3]\n```",
        "```\n$ ls -la\ntotal 0\n```\n",
        "```\n{\n  a: 1\n}\n```",
        '```python\ndef f():\n    return {"name": "x", "arguments": {}}\n```',
        "Inline ```json fences``` are prose.",
        'Say ```json\n{"name": "t", "arguments": {}}\n``` mid-line.',
        '````markdown\n```json\n{"name": "t", "arguments": {}}\n```\n````\n',
        "```json\n```",
        "```js",
        "  ```\n",
    ],
)
def test_fences_that_are_not_calls_stay_content_byte_for_byte(text: str) -> None:
    assert streamed(text) == [TextPiece("content", text)]


def test_ordinary_code_blocks_stream_live() -> None:
    parser = ToolCallParser()
    assert parser.feed("Try:\n```py") == [TextPiece("content", "Try:\n```py")]
    assert parser.feed("thon\nprint(1)\n") == [TextPiece("content", "thon\nprint(1)\n")]
    assert parser.feed("```\nok") == [TextPiece("content", "```\nok")]
    assert parser.finish() == []


def test_a_fence_without_language_is_released_once_it_is_not_json() -> None:
    parser = ToolCallParser()
    assert parser.feed("Run:\n```\n") == [TextPiece("content", "Run:\n")]
    assert parser.feed("$ make") == [TextPiece("content", "```\n$ make")]
    # backticks at a line start are held until their line shows what they are
    assert parser.feed("\n```") == [TextPiece("content", "\n")]
    assert parser.finish() == [TextPiece("content", "```")]


def test_text_before_a_fenced_call_streams_live() -> None:
    parser = ToolCallParser()
    assert parser.feed("Listing files now.\n``") == [TextPiece("content", "Listing files now.\n")]
    assert parser.feed('`json\n{"name": "terminal", ') == []
    assert parser.feed('"arguments": {"command": "ls -la"}}\n```\nDone') == [
        call(0, "terminal", LS, FENCED),
        TextPiece("content", "\nDone"),
    ]
    assert parser.finish() == []


def test_closing_fence_of_a_code_block_is_not_taken_for_an_opening_one() -> None:
    code = "Example:\n```python\nprint('hi')\n```\n"
    events = streamed(code + FENCED)
    assert content(events) == code
    assert calls(events) == [call(0, "terminal", LS, FENCED)]


def test_a_fence_holding_a_tagged_call_gives_the_call() -> None:
    text = f"```xml\n{HERMES}\n```"
    events = streamed(text)
    assert content(events) == "```xml\n\n```"
    assert [c.name for c in calls(events)] == ["read_file"]


# -- 4. Llama 3.x -----------------------------------------------------------------------------


def test_python_tag_calls_separated_by_semicolons() -> None:
    first = '{"name": "read_file", "parameters": {"path": "a.py"}}'
    second = '{"name": "terminal", "parameters": {"command": "ls -la"}}'
    text = f"<|python_tag|>{first}; {second}<|eom_id|>"
    events = streamed(text)
    assert calls(events) == [
        call(0, "read_file", {"path": "a.py"}, first),
        call(1, "terminal", LS, second),
    ]
    assert content(events) == ""


def test_python_tag_without_end_token_and_eot_id() -> None:
    assert only_call(f"<|python_tag|>{PYTHON_TAG_JSON}").arguments == LS
    events = streamed(f"<|python_tag|>{PYTHON_TAG_JSON}<|eot_id|>")
    assert content(events) == ""
    assert calls(events)[0].raw == f"<|python_tag|>{PYTHON_TAG_JSON}<|eot_id|>"


def test_python_tag_with_code_instead_of_json_is_an_error() -> None:
    found = only_call('<|python_tag|>brave_search.call(query="weather")<|eom_id|>')
    assert found.error == (
        'Could not parse tool call: expected a JSON object like {"name": "<tool name>", '
        '"parameters": {...}} after <|python_tag|>'
    )


def test_python_tag_with_a_broken_second_call() -> None:
    found = calls(streamed('<|python_tag|>{"name": "a", "parameters": {}}; {"name": "b", '))
    assert [(c.name, c.error is None) for c in found] == [("a", True), ("b", False)]


def test_llama_type_function_json_is_a_call() -> None:
    text = '{"type": "function", "name": "terminal", "parameters": {"command": "ls -la"}}'
    assert streamed(text) == [call(0, "terminal", LS, text)]


def test_llama_json_calls_separated_by_semicolons_without_python_tag() -> None:
    first = '{"name": "read_file", "parameters": {"path": "a.py"}}'
    text = f"{first}; {PYTHON_TAG_JSON}"
    assert streamed(text) == [
        call(0, "read_file", {"path": "a.py"}, first),
        call(1, "terminal", LS, PYTHON_TAG_JSON),
    ]
    not_calls = '{"a": 1}; {"b": 2}'
    assert streamed(not_calls) == [TextPiece("content", not_calls)]


def test_llama_pythonic_list_is_calls() -> None:
    text = '[read_file(path="a.py"), terminal(command="ls -la")]'
    assert streamed(text) == [
        call(0, "read_file", {"path": "a.py"}, 'read_file(path="a.py")'),
        call(1, "terminal", LS, 'terminal(command="ls -la")'),
    ]


@pytest.mark.parametrize("text", ['[terminal("ls")]', "[f(x=y)]", "[print]"])
def test_python_lists_that_are_not_clean_calls_stay_content(text: str) -> None:
    assert streamed(text) == [TextPiece("content", text)]


# -- 5. Mistral -------------------------------------------------------------------------------


def test_mistral_v3_list_of_calls() -> None:
    first = '{"name": "read_file", "arguments": {"path": "a.py"}}'
    second = '{"name": "terminal", "arguments": {"command": "ls -la"}}'
    events = streamed(f"[TOOL_CALLS] [{first}, {second}]")
    assert calls(events) == [
        call(0, "read_file", {"path": "a.py"}, first),
        call(1, "terminal", LS, second),
    ]


def test_mistral_repeated_args_form() -> None:
    text = (
        '[TOOL_CALLS]read_file[ARGS]{"path": "a.py"}[TOOL_CALLS]terminal[ARGS]{"command": "ls -la"}'
    )
    assert calls(streamed(text)) == [
        call(0, "read_file", {"path": "a.py"}, '[TOOL_CALLS]read_file[ARGS]{"path": "a.py"}'),
        call(1, "terminal", LS, '[TOOL_CALLS]terminal[ARGS]{"command": "ls -la"}'),
    ]


def test_mistral_call_id_is_skipped() -> None:
    found = only_call('[TOOL_CALLS]terminal[CALL_ID]a1B2c3D4e[ARGS]{"command": "ls -la"}')
    assert (found.name, found.arguments, found.error) == ("terminal", LS, None)


def test_mistral_call_ends_where_its_json_ends() -> None:
    parser = ToolCallParser()
    assert parser.feed("[TOOL_CALLS]terminal[ARGS]") == [ArgsPreview(0, "terminal[ARGS]")]
    assert parser.feed('{"command": "ls -la"}') == [
        ArgsPreview(0, '{"command": "ls -la"}'),
        call(0, "terminal", LS, '[TOOL_CALLS]terminal[ARGS]{"command": "ls -la"}'),
    ]
    assert parser.feed(" done") == [TextPiece("content", " done")]
    assert parser.finish() == []


@pytest.mark.parametrize(
    ("text", "error"),
    [
        (
            '[TOOL_CALLS]terminal{"command": "ls"}',
            'expected [{"name": ..., "arguments": {...}}] or <tool name>[ARGS]{...} '
            "after [TOOL_CALLS]",
        ),
        (
            '[TOOL_CALLS]terminal[ARGS]{"command": "ls"',
            "arguments are not valid JSON: Expecting ',' delimiter at line 1 column 17",
        ),
        ("[TOOL_CALLS]terminal[ARGS][1]", "arguments must be a JSON object, got array"),
    ],
)
def test_malformed_mistral_calls_are_errors(text: str, error: str) -> None:
    found = only_call(text)
    assert found.error == "Could not parse tool call: " + error
    assert found.name == "terminal"


# -- 6. Qwen3-coder XML -----------------------------------------------------------------------


def test_qwen3_coder_several_parameters_with_multiline_values() -> None:
    text = (
        "<tool_call>\n<function=write_file>\n<parameter=path>\nsrc/app.py\n</parameter>\n"
        "<parameter=content>\nimport os\n\nprint(os.getcwd())\n\n</parameter>\n"
        "</function>\n</tool_call>"
    )
    found = only_call(text)
    assert found.name == "write_file"
    # exactly one leading and one trailing newline are dropped
    assert found.arguments == {"path": "src/app.py", "content": "import os\n\nprint(os.getcwd())\n"}


def test_qwen3_coder_values_stay_strings() -> None:
    text = (
        "<tool_call>\n<function=f>\n<parameter=n>\n123\n</parameter>\n"
        "<parameter=flag>\ntrue\n</parameter>\n<parameter=items>\n[1, 2]\n</parameter>\n"
        "<parameter=command>\nls\n</parameter>\n</function>\n</tool_call>"
    )
    assert only_call(text).arguments == {
        "n": "123",
        "flag": "true",
        "items": "[1, 2]",
        "command": "ls",
    }


def test_qwen3_coder_without_tool_call_wrapper() -> None:
    text = (
        "Let me look.\n<function=terminal>\n<parameter=command>\nls -la\n</parameter>\n</function>"
    )
    events = streamed(text)
    assert content(events) == "Let me look.\n"
    assert calls(events) == [call(0, "terminal", LS, text.removeprefix("Let me look.\n"))]


def test_qwen3_coder_missing_parameter_close_and_two_calls() -> None:
    one = "<tool_call>\n<function=terminal>\n<parameter=command>\nls -la\n</function>\n</tool_call>"
    two = "<tool_call>\n<function=read_file>\n<parameter=path>\na.py\n</parameter>\n</tool_call>"
    found = calls(streamed(f"{one}\n{two}"))
    assert [(c.index, c.name, c.arguments, c.error) for c in found] == [
        (0, "terminal", LS, None),
        (1, "read_file", {"path": "a.py"}, None),
    ]


def test_llama_function_tag_with_json_body() -> None:
    text = '<function=terminal>{"command": "ls -la"}</function>'
    assert calls(streamed(text)) == [call(0, "terminal", LS, text)]


def test_qwen3_coder_broken_function_tag_is_an_error() -> None:
    found = only_call("<tool_call>\n<function terminal>\n</tool_call>")
    assert (
        found.error
        == "Could not parse tool call: no JSON object found in <tool_call>...</tool_call>"
    )
    found = only_call("<tool_call>\n<function=>\n</function>\n</tool_call>")
    assert found.error == "Could not parse tool call: missing the tool name in <function=...>"


# -- 7. Gemma ---------------------------------------------------------------------------------


def test_gemma_print_and_module_prefix_are_dropped() -> None:
    text = '```tool_code\nprint(default_api.terminal(command="ls -la"))\n```'
    assert only_call(text).arguments == LS


def test_gemma_several_calls_and_literal_values() -> None:
    text = (
        "```tool_code\n"
        'read_file(path="a.py")\n'
        "search_files(pattern='TODO|FIXME', limit=5, opts={'case': False, 'ext': ('py', 'md')})\n"
        "```"
    )
    found = calls(streamed(text))
    assert [(c.index, c.name, c.arguments, c.error) for c in found] == [
        (0, "read_file", {"path": "a.py"}, None),
        (
            1,
            "search_files",
            {"pattern": "TODO|FIXME", "limit": 5, "opts": {"case": False, "ext": ["py", "md"]}},
            None,
        ),
    ]
    assert found[1].raw.startswith("search_files(")


def test_gemma_closing_fence_inside_a_string_does_not_end_the_call() -> None:
    found = only_call('```tool_code\nterminal(command="echo ```")\n```')
    assert found.arguments == {"command": "echo ```"}


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (
            'terminal("ls -la")',
            "terminal() takes keyword arguments only, like terminal(arg=value); "
            "got 1 positional argument(s)",
        ),
        (
            "terminal(command=os.getcwd())",
            "argument 'command' of terminal() must be a literal (string, number, "
            "True/False/None, list or dict), got os.getcwd()",
        ),
        ('terminal(command="ls"', "invalid Python call syntax: '(' was never closed (line 1)"),
        ("x = terminal()", "expected only function calls like tool_name(arg=value)"),
        ("", "no function call found; write tool_name(arg=value)"),
    ],
)
def test_bad_gemma_tool_code_is_an_error_the_model_sees(body: str, error: str) -> None:
    found = only_call(f"```tool_code\n{body}\n```")
    assert found.error == "Could not parse tool call: " + error
    assert found.arguments == {}


def test_function_gemma_typed_values() -> None:
    text = (
        "<start_function_call>call:configure{name:<escape>a, b {c}<escape>,retries:3,"
        "ratio:0.5,verbose:true,extra:null,tags:[<escape>x<escape>,2],"
        "nested:{k:<escape>v<escape>}}<end_function_call>"
    )
    assert only_call(text).arguments == {
        "name": "a, b {c}",
        "retries": 3,
        "ratio": 0.5,
        "verbose": True,
        "extra": None,
        "tags": ["x", 2],
        "nested": {"k": "v"},
    }


def test_function_gemma_parallel_calls() -> None:
    one = "<start_function_call>call:get_weather{city:<escape>Tokyo<escape>}<end_function_call>"
    two = (
        "<start_function_call>call:get_stock_price{ticker:<escape>GOOG<escape>}<end_function_call>"
    )
    found = calls(streamed(one + two))
    assert [(c.index, c.name, c.arguments) for c in found] == [
        (0, "get_weather", {"city": "Tokyo"}),
        (1, "get_stock_price", {"ticker": "GOOG"}),
    ]


@pytest.mark.parametrize(
    ("inner", "error"),
    [
        (
            "call:terminal{command:<escape>ls}",
            "unterminated <escape> string in the arguments of terminal",
        ),
        (
            "terminal{command:<escape>ls<escape>}",
            "expected call:<tool name>{key:value,...} after <start_function_call>",
        ),
        (
            "call:terminal{command}",
            "expected key:value at character 14 in the arguments of terminal",
        ),
    ],
)
def test_malformed_function_gemma_is_an_error(inner: str, error: str) -> None:
    found = only_call(f"<start_function_call>{inner}<end_function_call>")
    assert found.error == "Could not parse tool call: " + error


# -- 8. DeepSeek ------------------------------------------------------------------------------


def test_deepseek_two_calls_then_text() -> None:
    second = f'{CALL_BEGIN}read_file{SEP}{{"path": "a.py"}}{CALL_END}'
    text = f"Sure.{CALLS_BEGIN}{DS_V31_CALL}\n{second}{CALLS_END}\nok"
    events = streamed(text)
    assert content(events) == "Sure.\nok"
    assert calls(events) == [
        call(0, "terminal", LS, DS_V31_CALL),
        call(1, "read_file", {"path": "a.py"}, second),
    ]


def test_deepseek_call_is_given_when_its_end_token_arrives() -> None:
    parser = ToolCallParser()
    parser.feed(CALLS_BEGIN + DS_V31_CALL.removesuffix(CALL_END))
    assert parser.feed(CALL_END) == [call(0, "terminal", LS, DS_V31_CALL)]
    assert parser.feed(CALLS_END) == []
    assert parser.finish() == []


def test_deepseek_unclosed_call_at_end_of_turn() -> None:
    text = f'{CALLS_BEGIN}{CALL_BEGIN}terminal{SEP}{{"command": "ls -la"}}'
    assert calls(streamed(text)) == [call(0, "terminal", LS, text.removeprefix(CALLS_BEGIN))]


@pytest.mark.parametrize(
    ("text", "error"),
    [
        (f"{CALLS_BEGIN}{CALLS_END}", f"no {CALL_BEGIN} inside {CALLS_BEGIN}"),
        (f"{CALLS_BEGIN}{CALL_BEGIN}terminal{CALL_END}", f"expected <tool name>{SEP}{{arguments}}"),
        (
            f'{CALLS_BEGIN}{CALL_BEGIN}terminal{SEP}{{"command": }}{CALL_END}',
            "arguments are not valid JSON: Expecting value at line 1 column 13",
        ),
    ],
)
def test_malformed_deepseek_is_an_error(text: str, error: str) -> None:
    assert only_call(text).error == "Could not parse tool call: " + error


# -- all families: streaming properties -------------------------------------------------------

FRAGMENTS = [
    "```", "```json\n", "```tool_code\n", "```tool_call\n", "```python\n", "`", "\n", " ", "{", "}",
    "[", "]", '"', "'", ",", ";", "abc", "<", '{"name": "t", "arguments": {"a": 1}}', "t(a=1)",
    "<|python_tag|>", "<|eom_id|>", "[TOOL_CALLS]", "[ARGS]", "<function=t>", "</function>",
    "<parameter=a>", "</parameter>", "<tool_call>", "</tool_call>", "<think>", "</think>",
    "<start_function_call>", "<end_function_call>", "call:t{a:<escape>x<escape>}", "<escape>",
    CALLS_BEGIN, CALL_BEGIN, SEP, CALL_END, CALLS_END, "function",
]  # fmt: skip


@pytest.mark.parametrize("tools_enabled", [True, False])
def test_same_events_for_random_family_texts_whatever_the_delta_sizes(tools_enabled: bool) -> None:
    rng = random.Random(99)
    for n in range(400):
        text = "".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(0, 14)))
        whole = merged(feed_chunks([text], tools_enabled=tools_enabled))
        assert merged(feed_chunks(list(text), tools_enabled=tools_enabled)) == whole, text
        chunks = random_chunks(text, n)
        assert merged(feed_chunks(chunks, tools_enabled=tools_enabled)) == whole, text
        for event in feed_chunks(chunks, tools_enabled=tools_enabled):
            if isinstance(event, TextPiece | ArgsPreview):
                assert event.text
        if not tools_enabled:
            assert calls(whole) == []


DEEP = "[" * 5000


@pytest.mark.parametrize(
    "text",
    [
        DEEP,
        '{"a":' * 5000,
        f"<tool_call>{DEEP}</tool_call>",
        f'<tool_call>{{"name": "t", "arguments": "{DEEP}"}}</tool_call>',
        f"```json\n{DEEP}{']' * 5000}\n```",
        f"```tool_code\nf(a={DEEP})\n```",
        "```tool_code\nf(a='\x00')\n```",
        f"[f(a={'[' * 3000}{']' * 3000})]",
        "<start_function_call>call:f{a:" + "{a:" * 5000,
        f"[TOOL_CALLS]{DEEP}{']' * 5000}",
        f"<|python_tag|>{DEEP}",
        CALLS_BEGIN + CALL_BEGIN + "f" + SEP + '{"a":' * 5000,
    ],
)
def test_hostile_texts_never_raise(text: str) -> None:
    parser = ToolCallParser()
    events = parser.feed(text) + parser.finish()
    for found in calls(events):
        assert found.error is None or found.error.startswith("Could not parse tool call: ")


@pytest.mark.parametrize(
    "marker",
    ["```", "[TOOL_CALLS]", "<|python_tag|>", "<function=", "<start_function_call>", CALLS_BEGIN],
)
def test_only_a_possible_marker_start_is_held(marker: str) -> None:
    parser = ToolCallParser()
    start = marker[: len(marker) // 2]
    assert parser.feed(f"see\n{start}") == [TextPiece("content", "see\n")]
    assert parser.feed("x") == [TextPiece("content", f"{start}x")]
    assert parser.finish() == []
