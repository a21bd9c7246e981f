"""The read-only file tools and the workspace boundary they rely on.

A secret is planted outside the workspace; no tool output and no error message may ever contain
it, whichever way the model tries to reach it (``..``, an absolute path, symbolic links).
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from engine.tools.base import Tool, ToolContext, ToolError
from engine.tools.files import (
    FILE_TOOLS,
    MAX_READ_BYTES,
    ListFilesTool,
    ReadFileTool,
    SearchFilesArgs,
    SearchFilesTool,
)
from engine.workspace import display_path, resolve_in_workspace

SECRET = "TOP-SECRET-d41d8cd98f00"
OUTSIDE_NAME = "only-outside-file.txt"

needs_symlinks = pytest.mark.skipif(sys.platform == "win32", reason="symlinks need privileges")


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    out = tmp_path / "outside"
    (out / "dir").mkdir(parents=True)
    (out / OUTSIDE_NAME).write_text(f"the secret is {SECRET}\n")
    (out / "dir" / OUTSIDE_NAME).write_text(f"also {SECRET}\n")
    return out


@pytest.fixture
def ws(tmp_path: Path, outside: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "README.md").write_text("# Demo\nhello world\n")
    (root / "src" / "main.py").write_text("def main():\n    print('hello')\n")
    (root / "src" / "pkg" / "util.py").write_text("X = 1\n")
    return root


@pytest.fixture
def links(ws: Path, outside: Path) -> Path:
    """Symbolic links inside the workspace that lead outside it."""
    if sys.platform == "win32":
        pytest.skip("symlinks need privileges")
    (ws / "link_file").symlink_to(outside / OUTSIDE_NAME)
    (ws / "link_dir").symlink_to(outside / "dir", target_is_directory=True)
    (ws / "src" / "parent_link").symlink_to(outside, target_is_directory=True)
    return ws


def ctx_for(workspace: Path) -> ToolContext:
    return ToolContext(workspace=workspace, timeout_seconds=30)


async def call(tool: Tool, workspace: Path, **arguments: Any) -> str:
    args = tool.parse_arguments(arguments)
    outcome = await tool.run(args, ctx_for(workspace))
    assert not outcome.failed
    return outcome.text


async def call_error(tool: Tool, workspace: Path, **arguments: Any) -> str:
    with pytest.raises(ToolError) as info:
        await call(tool, workspace, **arguments)
    message = str(info.value)
    assert SECRET not in message
    return message


# --- the workspace boundary ------------------------------------------------------------------


def test_resolve_inside_relative_absolute_and_empty(ws: Path) -> None:
    real = ws.resolve()
    assert resolve_in_workspace(ws, "src/main.py") == real / "src" / "main.py"
    assert resolve_in_workspace(ws, str(ws / "README.md")) == real / "README.md"
    assert resolve_in_workspace(ws, "src/pkg/../main.py") == real / "src" / "main.py"
    assert resolve_in_workspace(ws, None) == real
    assert resolve_in_workspace(ws, "") == real
    assert resolve_in_workspace(ws, ".") == real


@pytest.mark.parametrize(
    "path", ["..", "../outside/" + OUTSIDE_NAME, "src/../../outside", "src/pkg/../../../outside"]
)
def test_resolve_refuses_dotdot(ws: Path, path: str) -> None:
    with pytest.raises(ToolError, match="outside the workspace"):
        resolve_in_workspace(ws, path)


def test_resolve_refuses_absolute_path_elsewhere(ws: Path, outside: Path) -> None:
    with pytest.raises(ToolError, match="outside the workspace"):
        resolve_in_workspace(ws, str(outside / OUTSIDE_NAME))
    with pytest.raises(ToolError, match="outside the workspace"):
        resolve_in_workspace(ws, "/")


@pytest.mark.parametrize("path", ["link_file", "link_dir", "link_dir/x", "src/parent_link/dir"])
def test_resolve_refuses_symlinks_leading_outside(links: Path, path: str) -> None:
    with pytest.raises(ToolError, match="symbolic link"):
        resolve_in_workspace(links, path)
    with pytest.raises(ToolError, match="symbolic link"):
        resolve_in_workspace(links, path, must_exist=False)


@needs_symlinks
def test_resolve_allows_symlink_inside_and_symlinked_workspace(ws: Path, tmp_path: Path) -> None:
    (ws / "alias").symlink_to(ws / "src", target_is_directory=True)
    assert resolve_in_workspace(ws, "alias/main.py") == ws.resolve() / "src" / "main.py"
    via_link = tmp_path / "ws_link"
    via_link.symlink_to(ws, target_is_directory=True)
    assert resolve_in_workspace(via_link, "src/main.py") == ws.resolve() / "src" / "main.py"
    assert resolve_in_workspace(via_link, str(via_link / "README.md")) == ws / "README.md"


def test_resolve_missing_nul_and_must_exist(ws: Path) -> None:
    with pytest.raises(ToolError, match=r"^No such file or directory: nope/x\.txt$"):
        resolve_in_workspace(ws, "nope/x.txt")
    assert resolve_in_workspace(ws, "new.txt", must_exist=False) == ws.resolve() / "new.txt"
    with pytest.raises(ToolError, match="outside the workspace"):
        resolve_in_workspace(ws, "../new.txt", must_exist=False)
    with pytest.raises(ToolError, match="NUL"):
        resolve_in_workspace(ws, "src/main.py\x00.txt")


def test_resolve_missing_workspace(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="workspace"):
        resolve_in_workspace(tmp_path / "gone", "a.txt")


def test_display_path(ws: Path) -> None:
    assert display_path(ws, ws.resolve() / "src" / "main.py") == "src/main.py"
    assert display_path(ws, ws / "src") == "src"
    assert display_path(ws, ws.resolve()) == "."


# --- read_file -------------------------------------------------------------------------------


async def test_read_file_inside(ws: Path) -> None:
    assert await call(ReadFileTool(), ws, path="src/main.py") == (
        "def main():\n    print('hello')\n"
    )
    assert await call(ReadFileTool(), ws, path=str(ws / "README.md")) == "# Demo\nhello world\n"


async def test_read_file_refuses_outside(ws: Path, outside: Path) -> None:
    for path in ["../outside/" + OUTSIDE_NAME, str(outside / OUTSIDE_NAME)]:
        message = await call_error(ReadFileTool(), ws, path=path)
        assert "outside the workspace" in message


@pytest.mark.parametrize(
    "path", ["link_file", "link_dir/" + OUTSIDE_NAME, "src/parent_link/" + OUTSIDE_NAME]
)
async def test_read_file_refuses_symlinks_outside(links: Path, path: str) -> None:
    message = await call_error(ReadFileTool(), links, path=path)
    assert "symbolic link" in message


async def test_read_file_missing_directory_and_binary(ws: Path) -> None:
    assert await call_error(ReadFileTool(), ws, path="nope.py") == (
        "No such file or directory: nope.py"
    )
    assert "list_files" in await call_error(ReadFileTool(), ws, path="src")
    (ws / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    assert "binary" in await call_error(ReadFileTool(), ws, path="image.png")


async def test_read_file_truncates_with_notice(ws: Path) -> None:
    (ws / "big.txt").write_text("a" * (MAX_READ_BYTES + 1000))
    text = await call(ReadFileTool(), ws, path="big.txt")
    assert text.startswith("a" * MAX_READ_BYTES)
    assert text.count("a") < MAX_READ_BYTES + 20
    assert "Truncated" in text
    assert "1000 bytes were omitted" in text


async def test_read_file_replaces_invalid_utf8_and_empty(ws: Path) -> None:
    (ws / "latin1.txt").write_bytes(b"caf\xe9\n")
    assert await call(ReadFileTool(), ws, path="latin1.txt") == "caf\ufffd\n"
    (ws / "empty.txt").write_text("")
    assert "empty" in await call(ReadFileTool(), ws, path="empty.txt")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
async def test_read_file_refuses_fifo_without_hanging(ws: Path) -> None:
    os.mkfifo(ws / "pipe")
    message = await asyncio.wait_for(call_error(ReadFileTool(), ws, path="pipe"), 5)
    assert "not a regular file" in message


async def test_read_file_bad_arguments() -> None:
    with pytest.raises(ToolError, match="Invalid arguments for read_file"):
        ReadFileTool().parse_arguments({"path": "a", "mode": "w"})
    with pytest.raises(ToolError, match="path"):
        ReadFileTool().parse_arguments({})


# --- list_files ------------------------------------------------------------------------------


async def test_list_files_whole_workspace(ws: Path) -> None:
    for skipped in [".git", "node_modules", "__pycache__", ".venv"]:
        (ws / skipped).mkdir()
        (ws / skipped / "inner.txt").write_text("x")
    assert await call(ListFilesTool(), ws) == "\n".join(
        ["README.md", "src/", "src/main.py", "src/pkg/", "src/pkg/util.py"]
    )


async def test_list_files_subdirectory_and_errors(ws: Path) -> None:
    assert await call(ListFilesTool(), ws, path="src/pkg") == "src/pkg/util.py"
    (ws / "empty").mkdir()
    assert await call(ListFilesTool(), ws, path="empty") == "(empty directory)"
    assert "read_file" in await call_error(ListFilesTool(), ws, path="README.md")
    assert "outside the workspace" in await call_error(ListFilesTool(), ws, path="..")


async def test_list_files_shows_symlinks_without_following(links: Path, outside: Path) -> None:
    text = await call(ListFilesTool(), links)
    assert f"link_dir -> {outside / 'dir'}" in text
    assert f"link_file -> {outside / OUTSIDE_NAME}" in text
    assert "src/parent_link -> " in text
    assert f"link_dir/{OUTSIDE_NAME}" not in text
    assert "parent_link/dir" not in text
    assert SECRET not in text
    assert "symbolic link" in await call_error(ListFilesTool(), links, path="link_dir")
    assert "symbolic link" in await call_error(ListFilesTool(), links, path="src/parent_link")


async def test_list_files_depth_limit(ws: Path) -> None:
    deep = ws / "a" / "b" / "c" / "d" / "e"
    deep.mkdir(parents=True)
    (deep / "f.txt").write_text("x")
    text = await call(ListFilesTool(), ws, path="a")
    assert "a/b/c/d/e/" in text.splitlines()
    assert "a/b/c/d/e/f.txt" not in text
    assert "not expanded" in text


async def test_list_files_entry_limit(ws: Path) -> None:
    many = ws / "many"
    many.mkdir()
    for i in range(520):
        (many / f"f{i:03}.txt").write_text("")
    lines = (await call(ListFilesTool(), ws, path="many")).splitlines()
    assert lines[:2] == ["many/f000.txt", "many/f001.txt"]
    assert len(lines) == 501
    assert "20 more entries not shown" in lines[-1]


# --- search_files ----------------------------------------------------------------------------


async def test_search_files_finds_lines(ws: Path) -> None:
    assert await call(SearchFilesTool(), ws, pattern="hel+o") == (
        "README.md:2: hello world\nsrc/main.py:2:     print('hello')"
    )
    assert await call(SearchFilesTool(), ws, pattern=r"^def \w+", path="src") == (
        "src/main.py:1: def main():"
    )
    assert await call(SearchFilesTool(), ws, pattern="X", path="src/pkg/util.py") == (
        "src/pkg/util.py:1: X = 1"
    )


async def test_search_files_no_match(ws: Path) -> None:
    text = await call(SearchFilesTool(), ws, pattern="zebra")
    assert text.startswith("No matches for zebra")


async def test_search_files_never_follows_symlinks(links: Path, outside: Path) -> None:
    text = await call(SearchFilesTool(), links, pattern="secret")
    assert text.startswith("No matches for secret")
    assert SECRET not in text
    for path in ["link_file", "link_dir", "src/parent_link", str(outside), "../outside"]:
        await call_error(SearchFilesTool(), links, pattern="secret", path=path)


async def test_search_files_skips_binary_large_and_tool_dirs(ws: Path) -> None:
    (ws / "blob.bin").write_bytes(b"needle\x00\x01")
    (ws / "huge.txt").write_text("needle\n" + "x" * (2 * 1024 * 1024))
    (ws / "node_modules").mkdir()
    (ws / "node_modules" / "lib.js").write_text("needle\n")
    (ws / ".git").mkdir()
    (ws / ".git" / "config").write_text("needle\n")
    (ws / "ok.txt").write_text("a needle here\n")
    assert await call(SearchFilesTool(), ws, pattern="needle") == "ok.txt:1: a needle here"
    assert "binary" in await call_error(SearchFilesTool(), ws, pattern="needle", path="blob.bin")


async def test_search_files_match_limit_and_long_lines(ws: Path) -> None:
    (ws / "many.txt").write_text("hit\n" * 250)
    text = await call(SearchFilesTool(), ws, pattern="hit", path="many.txt")
    lines = text.splitlines()
    assert len(lines) == 201
    assert lines[199] == "many.txt:200: hit"
    assert "Stopped after 200 matches" in lines[-1]

    (ws / "min.js").write_text("x" * 5000 + "TARGET" + "y" * 5000 + "\n")
    text = await call(SearchFilesTool(), ws, pattern="TARGET", path="min.js")
    prefix = "min.js:1: "
    assert text.startswith(prefix)
    assert "TARGET" in text
    assert len(text) - len(prefix) <= 300


async def test_search_files_returns_partial_results_when_out_of_time(ws: Path) -> None:
    args = SearchFilesArgs(pattern="hello")
    outcome = await SearchFilesTool().run(args, ToolContext(workspace=ws, timeout_seconds=1e-9))
    assert "ran out of time" in outcome.text


async def test_search_files_bad_regex_and_arguments(ws: Path) -> None:
    message = await call_error(SearchFilesTool(), ws, pattern="foo(")
    assert "Invalid regular expression" in message
    assert "missing )" in message
    with pytest.raises(ToolError, match="pattern"):
        SearchFilesTool().parse_arguments({"path": "src"})
    with pytest.raises(ToolError, match="Invalid arguments for search_files"):
        SearchFilesTool().parse_arguments({"pattern": "x", "glob": "*.py"})


# --- the set of tools ------------------------------------------------------------------------


def test_file_tools_are_described() -> None:
    assert [tool.name for tool in FILE_TOOLS] == ["read_file", "list_files", "search_files"]
    for tool in FILE_TOOLS:
        assert tool.description
        schema = tool.parameters_schema()
        for name, prop in schema["properties"].items():
            assert prop.get("description"), (tool.name, name)
    assert SearchFilesTool.parameters_schema()["required"] == ["pattern"]
    assert "required" not in ListFilesTool.parameters_schema()
