"""The scripted backend: a written-down model that streams like a real one.

A bad script must be reported as a BackendError that names the file, so a user who mistyped the
``script`` option sees which file is wrong instead of a stack trace.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from engine.backends.base import BackendError, Finish, GenerationOptions
from engine.backends.scripted import ScriptedBackend, ScriptedTurn, load_script

TOOL_TURN = (
    'Let me look.\n<tool_call>{"name": "read_file", "arguments": {"path": "README.md"}}</tool_call>'
)


def write_script(tmp_path: Path, content: str | bytes, name: str = "script.json") -> Path:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


async def one_turn(
    backend: ScriptedBackend, options: GenerationOptions | None = None
) -> list[str | Finish]:
    return [c async for c in backend.stream([], [], options or GenerationOptions())]


def text_of(chunks: list[str | Finish]) -> str:
    return "".join(c for c in chunks if isinstance(c, str))


# -- loading --------------------------------------------------------------------------------------


def test_missing_script_is_reported_with_its_path(tmp_path: Path) -> None:
    path = tmp_path / "no-such-script.json"
    with pytest.raises(BackendError, match=re.escape(str(path))):
        load_script(path)


def test_script_path_that_is_a_folder_is_reported_with_its_path(tmp_path: Path) -> None:
    folder = tmp_path / "scripts.json"
    folder.mkdir()
    with pytest.raises(BackendError) as info:
        load_script(folder)
    assert str(folder) in str(info.value)


def test_script_that_is_not_json_is_reported_with_its_path(tmp_path: Path) -> None:
    path = write_script(tmp_path, '{"turns": ["hi",]}', "broken.json")
    with pytest.raises(BackendError) as info:
        load_script(path)
    assert str(path) in str(info.value)
    assert "JSON" in str(info.value)


@pytest.mark.parametrize(
    "document",
    [
        ["hello"],
        {"turn": ["hello"]},
        {"turns": "hello"},
        {"turns": [3]},
        {"turns": ["ok", {"content": "no text key"}]},
        {"turns": [{"text": 5}]},
        "just a string",
    ],
)
def test_script_of_the_wrong_shape_is_reported_with_its_path(tmp_path: Path, document: Any) -> None:
    path = write_script(tmp_path, json.dumps(document), "shape.json")
    with pytest.raises(BackendError) as info:
        load_script(path)
    assert str(path) in str(info.value)


@pytest.mark.parametrize("delay", [-1, "20", True, None, [20]])
def test_bad_chunk_delay_is_reported_with_its_path_and_turn(tmp_path: Path, delay: Any) -> None:
    path = write_script(
        tmp_path, json.dumps({"turns": ["fine", {"text": "slow", "chunkDelayMs": delay}]})
    )
    with pytest.raises(BackendError) as info:
        load_script(path)
    message = str(info.value)
    assert str(path) in message
    assert "turns[1].chunkDelayMs" in message


def test_script_that_is_not_utf8_is_reported_with_its_path(tmp_path: Path) -> None:
    path = write_script(tmp_path, b'{"turns": ["caf\xe9"]}', "latin1.json")
    with pytest.raises(BackendError) as info:
        load_script(path)
    assert str(path) in str(info.value)


def test_nan_chunk_delay_is_rejected(tmp_path: Path) -> None:
    path = write_script(tmp_path, '{"turns": [{"text": "slow", "chunkDelayMs": NaN}]}')
    with pytest.raises(BackendError, match=r"chunkDelayMs"):
        load_script(path)


def test_valid_script_loads_strings_and_slow_turns(tmp_path: Path) -> None:
    path = write_script(
        tmp_path,
        json.dumps({"turns": ["first", {"text": "second", "chunkDelayMs": 20}, {"text": "third"}]}),
        "demo.json",
    )
    assert load_script(path) == [
        ScriptedTurn("first"),
        ScriptedTurn("second", 0.02),
        ScriptedTurn("third"),
    ]
    assert ScriptedBackend.from_file(path).model == "demo.json"


# -- streaming ------------------------------------------------------------------------------------


async def test_turns_are_used_in_order_then_the_model_says_nothing() -> None:
    backend = ScriptedBackend([ScriptedTurn("First answer."), ScriptedTurn("Second answer.")])
    first = await one_turn(backend)
    second = await one_turn(backend)
    third = await one_turn(backend)
    fourth = await one_turn(backend)
    assert text_of(first) == "First answer."
    assert text_of(second) == "Second answer."
    assert third == [Finish("stop")]
    assert fourth == [Finish("stop")]
    assert backend.remaining_turns == 0


async def test_backend_without_turns_says_nothing() -> None:
    assert await one_turn(ScriptedBackend([])) == [Finish("stop")]


async def test_turn_streams_in_several_chunks_that_add_up_to_the_turn() -> None:
    backend = ScriptedBackend([ScriptedTurn(TOOL_TURN)])
    chunks = await one_turn(backend)
    assert chunks[-1] == Finish("stop")
    pieces = chunks[:-1]
    assert all(isinstance(p, str) and p for p in pieces)
    assert len(pieces) > 5
    assert "<tool_call>" not in pieces  # tags arrive split, as from a real tokenizer
    assert text_of(chunks) == TOOL_TURN


async def test_max_tokens_cuts_the_turn_short_with_finish_length() -> None:
    backend = ScriptedBackend([ScriptedTurn("one two three four"), ScriptedTurn("next turn")])
    chunks = await one_turn(backend, GenerationOptions(max_tokens=3))
    assert chunks == ["one", " two", " three", Finish("length")]
    # the cut turn is used up: the next call gets the next turn
    assert text_of(await one_turn(backend)) == "next turn"


async def test_turn_that_fits_in_max_tokens_finishes_normally() -> None:
    backend = ScriptedBackend([ScriptedTurn("one two three")])
    chunks = await one_turn(backend, GenerationOptions(max_tokens=3))
    assert chunks == ["one", " two", " three", Finish("stop")]


async def test_slow_turn_still_streams_the_whole_text() -> None:
    backend = ScriptedBackend([ScriptedTurn("a b c", chunk_delay_seconds=0.001)])
    assert text_of(await one_turn(backend)) == "a b c"
