"""The one writer of tool-call markup, read back by the parser that reads models."""

from __future__ import annotations

from engine.toolcalls import ParsedToolCall, ToolCallParser
from engine.toolcalls.markup import call_grammar_root, call_markup, response_markup


def parse(text: str) -> list[ParsedToolCall]:
    parser = ToolCallParser()
    events = parser.feed(text) + parser.finish()
    return [e for e in events if isinstance(e, ParsedToolCall)]


def test_what_the_writer_writes_the_parser_reads() -> None:
    (call,) = parse(call_markup("terminal", {"command": "wc -l *.py", "note": "é"}))
    assert (call.name, call.arguments, call.error) == (
        "terminal",
        {"command": "wc -l *.py", "note": "é"},
        None,
    )


def test_arguments_that_are_not_an_object_are_written_as_they_are_and_refused() -> None:
    (call,) = parse(call_markup("terminal", ["wc -l"]))
    assert call.name == "terminal" and call.error is not None
    assert "must be a JSON object, got array" in call.error


def test_a_result_is_labelled_with_its_tool() -> None:
    assert response_markup("terminal", "9 greet.py") == (
        "<tool_response>\nterminal: 9 greet.py\n</tool_response>"
    )


def test_the_grammar_root_wraps_one_call_in_the_call_tags() -> None:
    assert call_grammar_root("call") == 'root ::= "<tool_call>\\n" call "\\n</tool_call>"\n'
