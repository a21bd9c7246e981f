"""The edit tools: what a model can change, what it is told when it cannot, and what reaches disk.

Every test looks at the workspace the way a user would (the bytes and modes of the files), and at
what the model is told. A proposal is what the user reviews; nothing may be written before it is
applied, and what is applied is what was proposed (or the user's own version), or nothing.
"""

from __future__ import annotations

import codecs
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from engine.tools.base import ToolContext, ToolError, ToolOutcome
from engine.tools.edits import (
    ApplyPatchTool,
    EditFileTool,
    EditTool,
    Proposal,
    WriteFileTool,
)
from engine.tools.files import ReadFileTool
from engine.tools.filetext import MAX_EDIT_BYTES


class FakeEditor:
    """An editor holding some files open with the given text."""

    def __init__(self) -> None:
        self.open: dict[str, str] = {}
        self.written_paths: list[str] = []

    def has_unsaved_changes(self, path: str, disk_text: Callable[[], str]) -> bool:
        text = self.open.get(path)
        return text is not None and text != disk_text()

    def written(self, path: str) -> None:
        self.written_paths.append(path)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text(
        "def greet():\n    print('hi')\n\n\ndef main():\n    greet()\n"
    )
    (root / "notes.txt").write_text("one\ntwo\nthree\n")
    return root


def context(ws: Path, **kwargs: Any) -> ToolContext:
    return ToolContext(workspace=ws, timeout_seconds=30, **kwargs)


async def read(ctx: ToolContext, path: str) -> str:
    tool = ReadFileTool()
    outcome = await tool.run(tool.parse_arguments({"path": path}), ctx)
    return outcome.text


async def propose(tool: EditTool, ctx: ToolContext, **arguments: Any) -> Proposal:
    return await tool.propose(tool.parse_arguments(arguments), ctx)


async def refused(tool: EditTool, ctx: ToolContext, **arguments: Any) -> str:
    with pytest.raises(ToolError) as info:
        await propose(tool, ctx, **arguments)
    return str(info.value)


async def edit(ctx: ToolContext, path: str, old: str, new: str, **more: Any) -> ToolOutcome:
    proposal = await propose(EditFileTool(), ctx, path=path, old_text=old, new_text=new, **more)
    return await EditFileTool().apply(proposal, ctx)


# --- edit_file ---------------------------------------------------------------------------------


async def test_an_edit_is_proposed_as_a_diff_and_written_only_when_applied(ws: Path) -> None:
    ctx = context(ws)
    await read(ctx, "src/app.py")
    proposal = await propose(
        EditFileTool(), ctx, path="src/app.py", old_text="print('hi')", new_text="print('hello')"
    )
    [file] = proposal.edits
    assert (file.path, file.action) == ("src/app.py", "modify")
    assert "-    print('hi')\n+    print('hello')\n" in file.diff
    assert file.diff.startswith("--- a/src/app.py\n+++ b/src/app.py\n@@ -1,")
    assert "print('hi')" in (ws / "src" / "app.py").read_text()  # nothing written yet

    outcome = await EditFileTool().apply(proposal, ctx)
    assert "print('hello')" in (ws / "src" / "app.py").read_text()
    assert not outcome.failed and "replaced 1 occurrence" in outcome.text
    assert [(e.path, e.action, e.user_edited) for e in outcome.edits] == [
        ("src/app.py", "modify", False)
    ]
    assert outcome.edits[0].diff == file.diff
    assert sorted(os.listdir(ws / "src")) == ["app.py"]  # no temporary file left


async def test_old_text_found_several_times_names_the_lines_and_replace_all_changes_all(
    ws: Path,
) -> None:
    (ws / "notes.txt").write_text("x = 1\ny = 2\nx = 1\n")
    ctx = context(ws)
    await read(ctx, "notes.txt")
    message = await refused(EditFileTool(), ctx, path="notes.txt", old_text="x = 1", new_text="x=3")
    assert "matches 2 times" in message and "lines 1, 3" in message and "replace_all" in message
    await edit(ctx, "notes.txt", "x = 1", "x = 3", replace_all=True)
    assert (ws / "notes.txt").read_text() == "x = 3\ny = 2\nx = 3\n"


async def test_a_whitespace_near_miss_is_shown_with_the_files_exact_lines(ws: Path) -> None:
    ctx = context(ws)
    await read(ctx, "src/app.py")
    message = await refused(
        EditFileTool(), ctx, path="src/app.py", old_text="def main():\n  greet()", new_text="x"
    )
    assert "not found" in message and "lines 5-6" in message and "whitespace" in message
    assert "def main():\n    greet()" in message  # the exact text, to copy


async def test_a_miss_says_where_the_first_line_is(ws: Path) -> None:
    ctx = context(ws)
    await read(ctx, "src/app.py")
    message = await refused(
        EditFileTool(), ctx, path="src/app.py", old_text="def main():\n    run()", new_text="x"
    )
    assert "not found" in message and "line(s) 5" in message and "read_file" in message


async def test_empty_or_unchanged_old_text_is_refused(ws: Path) -> None:
    ctx = context(ws)
    await read(ctx, "notes.txt")
    assert "empty" in await refused(
        EditFileTool(), ctx, path="notes.txt", old_text="", new_text="a"
    )
    same = await refused(EditFileTool(), ctx, path="notes.txt", old_text="one", new_text="one")
    assert "nothing would change" in same


# --- read before edit --------------------------------------------------------------------------


async def test_a_file_not_read_in_this_session_cannot_be_changed(ws: Path) -> None:
    ctx = context(ws)
    message = await refused(EditFileTool(), ctx, path="notes.txt", old_text="one", new_text="1")
    assert "You have not read notes.txt" in message and "read_file" in message
    message = await refused(WriteFileTool(), ctx, path="notes.txt", content="new")
    assert "You have not read notes.txt" in message
    other = context(ws)  # another session's reads do not count
    await read(other, "notes.txt")
    assert "not read" in await refused(
        EditFileTool(), ctx, path="notes.txt", old_text="one", new_text="1"
    )


async def test_a_file_changed_since_it_was_read_must_be_read_again(ws: Path) -> None:
    ctx = context(ws)
    await read(ctx, "notes.txt")
    (ws / "notes.txt").write_text("one\ntwo\nthree\nfour\n")
    message = await refused(EditFileTool(), ctx, path="notes.txt", old_text="one", new_text="1")
    assert "changed since you read it: read it again" in message
    await read(ctx, "notes.txt")
    await edit(ctx, "notes.txt", "one", "1")
    assert (ws / "notes.txt").read_text() == "1\ntwo\nthree\nfour\n"


async def test_a_change_while_the_prompt_is_open_writes_nothing(ws: Path) -> None:
    ctx = context(ws)
    await read(ctx, "notes.txt")
    proposal = await propose(EditFileTool(), ctx, path="notes.txt", old_text="two", new_text="2")
    (ws / "notes.txt").write_text("one\nTWO\nthree\n")  # someone edits it while the user reviews
    with pytest.raises(ToolError) as info:
        await EditFileTool().apply(proposal, ctx)
    assert "Nothing was written" in str(info.value) and "read it again" in str(info.value)
    assert (ws / "notes.txt").read_text() == "one\nTWO\nthree\n"
    assert sorted(os.listdir(ws)) == ["notes.txt", "src"]


async def test_consecutive_edits_need_no_second_read(ws: Path) -> None:
    ctx = context(ws)
    await read(ctx, "notes.txt")
    await edit(ctx, "notes.txt", "one", "1")
    await edit(ctx, "notes.txt", "two", "2")  # the model knows what it wrote
    assert (ws / "notes.txt").read_text() == "1\n2\nthree\n"


# --- keeping what the file was -------------------------------------------------------------------


async def test_a_crlf_file_stays_crlf_and_edits_match_across_line_ends(ws: Path) -> None:
    (ws / "win.txt").write_bytes(b"alpha\r\nbeta\r\ngamma\r\n")
    ctx = context(ws)
    await read(ctx, "win.txt")
    await edit(ctx, "win.txt", "alpha\nbeta", "alpha\nBETA\nextra")
    assert (ws / "win.txt").read_bytes() == b"alpha\r\nBETA\r\nextra\r\ngamma\r\n"


async def test_a_bom_and_the_encoding_are_kept(ws: Path) -> None:
    (ws / "bom.txt").write_bytes(codecs.BOM_UTF8 + "café\n".encode())
    (ws / "wide.txt").write_bytes(codecs.BOM_UTF16_LE + "naïve\r\n".encode("utf-16-le"))
    ctx = context(ws)
    assert await read(ctx, "wide.txt") == "naïve\r\n"
    await read(ctx, "bom.txt")
    await edit(ctx, "bom.txt", "café", "crème")
    await edit(ctx, "wide.txt", "naïve", "blasé")
    assert (ws / "bom.txt").read_bytes() == codecs.BOM_UTF8 + "crème\n".encode()
    wide = codecs.BOM_UTF16_LE + "blasé\r\n".encode("utf-16-le")
    assert (ws / "wide.txt").read_bytes() == wide


async def test_permission_bits_are_kept(ws: Path) -> None:
    script = ws / "run.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o750)
    ctx = context(ws)
    await read(ctx, "run.sh")
    await edit(ctx, "run.sh", "echo hi", "echo hello")
    assert stat.S_IMODE(script.stat().st_mode) == 0o750
    assert script.read_text() == "#!/bin/sh\necho hello\n"


async def test_write_file_keeps_the_final_newline_as_the_file_had_it(ws: Path) -> None:
    (ws / "no-eol.txt").write_text("a")
    ctx = context(ws)
    await read(ctx, "notes.txt")
    await read(ctx, "no-eol.txt")
    for path, content in (("notes.txt", "uno\ndos"), ("no-eol.txt", "b\n")):
        proposal = await propose(WriteFileTool(), ctx, path=path, content=content)
        await WriteFileTool().apply(proposal, ctx)
    assert (ws / "notes.txt").read_text() == "uno\ndos\n"
    assert (ws / "no-eol.txt").read_text() == "b"


async def test_binary_non_utf8_and_oversized_files_are_refused(ws: Path) -> None:
    (ws / "image.png").write_bytes(b"\x89PNG\r\n\x00\x00data")
    (ws / "latin1.txt").write_bytes(b"caf\xe9\n")
    (ws / "huge.txt").write_bytes(b"x" * (MAX_EDIT_BYTES + 1))
    ctx = context(ws)
    for name in ("latin1.txt", "huge.txt", "notes.txt"):
        await read(ctx, name)
    ctx.reads.record("image.png", "whatever")
    binary = await refused(EditFileTool(), ctx, path="image.png", old_text="data", new_text="x")
    assert "binary" in binary
    latin = await refused(EditFileTool(), ctx, path="latin1.txt", old_text="caf", new_text="x")
    assert "not valid UTF-8" in latin
    huge = await refused(EditFileTool(), ctx, path="huge.txt", old_text="x", new_text="y")
    assert f"at most {MAX_EDIT_BYTES} bytes" in huge
    too_big = await refused(
        WriteFileTool(), ctx, path="big.txt", content="y" * (MAX_EDIT_BYTES + 1)
    )
    assert "at most" in too_big and not (ws / "big.txt").exists()


# --- paths -----------------------------------------------------------------------------------


async def test_paths_outside_the_workspace_are_refused(ws: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("secret\n")
    (ws / "escape").symlink_to(outside)
    (ws / "out_dir").symlink_to(tmp_path, target_is_directory=True)
    ctx = context(ws)
    for path in ("../outside.txt", str(outside), "escape", "out_dir/outside.txt"):
        message = await refused(WriteFileTool(), ctx, path=path, content="pwned")
        assert "outside the workspace" in message, path
    assert outside.read_text() == "secret\n"


async def test_a_link_inside_the_workspace_edits_its_target(ws: Path) -> None:
    (ws / "alias.txt").symlink_to(ws / "notes.txt")
    ctx = context(ws)
    await read(ctx, "alias.txt")  # the ledger knows the file by its real path
    proposal = await propose(EditFileTool(), ctx, path="alias.txt", old_text="two", new_text="2")
    assert proposal.edits[0].path == "notes.txt"
    await EditFileTool().apply(proposal, ctx)
    assert (ws / "notes.txt").read_text() == "one\n2\nthree\n"
    assert (ws / "alias.txt").is_symlink()


async def test_a_folder_swapped_for_a_link_outside_while_the_prompt_is_open_gets_nothing(
    ws: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "app.py").write_bytes((ws / "src" / "app.py").read_bytes())  # same digest
    ctx = context(ws)
    await read(ctx, "src/app.py")
    change = await propose(EditFileTool(), ctx, path="src/app.py", old_text="hi", new_text="yo")
    create = await propose(WriteFileTool(), ctx, path="pkg/new.py", content="X = 1\n")
    # While the person reads the diffs, something swaps the folders for links leading out.
    os.rename(ws / "src", ws / "src.moved")
    (ws / "src").symlink_to(outside, target_is_directory=True)
    (ws / "pkg").symlink_to(outside, target_is_directory=True)
    for tool, proposal in ((EditFileTool(), change), (WriteFileTool(), create)):
        with pytest.raises(ToolError) as info:
            await tool.apply(proposal, ctx)
        assert "outside the workspace" in str(info.value), str(info.value)
    assert "print('hi')" in (outside / "app.py").read_text()
    assert "print('hi')" in (ws / "src.moved" / "app.py").read_text()
    assert sorted(os.listdir(outside)) == ["app.py"]


async def test_write_file_creates_files_and_folders_without_a_read(ws: Path) -> None:
    ctx = context(ws)
    proposal = await propose(WriteFileTool(), ctx, path="pkg/sub/new.py", content="X = 1\n")
    [file] = proposal.edits
    assert (file.action, file.old_text) == ("create", None)
    assert file.diff == "--- /dev/null\n+++ b/pkg/sub/new.py\n@@ -0,0 +1 @@\n+X = 1\n"
    assert not (ws / "pkg").exists()
    await WriteFileTool().apply(proposal, ctx)
    assert (ws / "pkg" / "sub" / "new.py").read_text() == "X = 1\n"
    # Created by something else meanwhile: nothing is overwritten.
    second = await propose(WriteFileTool(), ctx, path="other.txt", content="mine\n")
    (ws / "other.txt").write_text("theirs\n")
    with pytest.raises(ToolError, match="created by something else"):
        await WriteFileTool().apply(second, ctx)
    assert (ws / "other.txt").read_text() == "theirs\n"


async def test_auto_run_paths_are_marked_protected(ws: Path) -> None:
    ctx = context(ws)
    proposal = await propose(WriteFileTool(), ctx, path=".vscode/tasks.json", content="{}\n")
    assert proposal.protected
    assert proposal.edits[0].protected is not None and "VS Code" in proposal.edits[0].protected
    ordinary = await propose(WriteFileTool(), ctx, path="docs/tasks.json", content="{}\n")
    assert not ordinary.protected


# --- the editor's unsaved changes --------------------------------------------------------------


async def test_a_file_with_unsaved_changes_in_the_editor_is_not_changed(ws: Path) -> None:
    editor = FakeEditor()
    ctx = context(ws, documents=editor)
    real = str(ws.resolve() / "notes.txt")
    await read(ctx, "notes.txt")
    editor.open[real] = "one\ntwo (typing)\nthree\n"
    message = await refused(EditFileTool(), ctx, path="notes.txt", old_text="one", new_text="1")
    assert "unsaved changes" in message
    editor.open[real] = "one\ntwo\nthree\n"  # saved: the editor shows what is on disk
    proposal = await propose(EditFileTool(), ctx, path="notes.txt", old_text="one", new_text="1")
    editor.open[real] = "one\ntwo!\nthree\n"  # the user types while the prompt is open
    with pytest.raises(ToolError, match="unsaved changes"):
        await EditFileTool().apply(proposal, ctx)
    assert (ws / "notes.txt").read_text() == "one\ntwo\nthree\n"
    editor.open.clear()
    await EditFileTool().apply(proposal, ctx)
    assert editor.written_paths == [real]


# --- the user's own version --------------------------------------------------------------------


async def test_the_users_version_is_written_and_the_model_is_told_the_difference(
    ws: Path,
) -> None:
    (ws / "win.txt").write_bytes(b"a\r\nb\r\n")
    ctx = context(ws)
    await read(ctx, "win.txt")
    proposal = await propose(EditFileTool(), ctx, path="win.txt", old_text="b", new_text="B")
    outcome = await EditFileTool().apply(proposal, ctx, {"win.txt": "a\nB\nc by the user\n"})
    assert (ws / "win.txt").read_bytes() == b"a\r\nB\r\nc by the user\r\n"
    [applied] = outcome.edits
    assert applied.user_edited and "+c by the user" in applied.diff
    assert "The user changed your proposal" in outcome.text
    assert "+c by the user" in outcome.text and "do not undo" in outcome.text
    # The model is not asked to read its own accepted file again.
    await edit(ctx, "win.txt", "c by the user", "c")
    with pytest.raises(ToolError, match="does not change"):
        await EditFileTool().apply(proposal, ctx, {"other.txt": "x"})


# --- apply_patch -------------------------------------------------------------------------------

PATCH = """\
--- a/src/app.py
+++ b/src/app.py
@@ -1,2 +1,2 @@
 def greet():
-    print('hi')
+    print('hello')
--- a/notes.txt
+++ /dev/null
@@ -1,3 +0,0 @@
-one
-two
-three
--- /dev/null
+++ b/docs/new.md
@@ -0,0 +1,2 @@
+# New
+text
"""


async def test_a_patch_creates_changes_and_deletes_files(ws: Path) -> None:
    ctx = context(ws)
    await read(ctx, "src/app.py")
    await read(ctx, "notes.txt")
    proposal = await propose(ApplyPatchTool(), ctx, patch=PATCH)
    assert [(e.path, e.action) for e in proposal.edits] == [
        ("src/app.py", "modify"),
        ("notes.txt", "delete"),
        ("docs/new.md", "create"),
    ]
    assert (ws / "notes.txt").exists() and not (ws / "docs").exists()
    outcome = await ApplyPatchTool().apply(proposal, ctx)
    assert "print('hello')" in (ws / "src" / "app.py").read_text()
    assert not (ws / "notes.txt").exists()
    assert (ws / "docs" / "new.md").read_text() == "# New\ntext\n"
    assert len(outcome.edits) == 3
    assert sorted(os.listdir(ws)) == ["docs", "src"]


async def test_a_patch_that_creates_an_executable_file_shows_it_in_the_diff(ws: Path) -> None:
    patch = "new file mode 100755\n--- /dev/null\n+++ b/run.sh\n@@ -0,0 +1 @@\n+echo hi\n"
    ctx = context(ws)
    proposal = await propose(ApplyPatchTool(), ctx, patch=patch)
    [created] = proposal.edits
    assert created.diff.startswith("new file mode 100755\n--- /dev/null\n+++ b/run.sh\n")
    outcome = await ApplyPatchTool().apply(proposal, ctx)
    assert os.stat(ws / "run.sh").st_mode & stat.S_IXUSR
    assert outcome.edits[0].diff == created.diff  # tool_end says so too


async def test_a_patch_whose_third_file_is_stale_changes_nothing(ws: Path) -> None:
    for name in ("a.txt", "b.txt", "c.txt"):
        (ws / name).write_text(f"{name}\n")
    ctx = context(ws)
    for name in ("a.txt", "b.txt", "c.txt"):
        await read(ctx, name)
    patch = "".join(
        f"--- a/{n}\n+++ b/{n}\n@@ -1 +1 @@\n-{n}\n+{n} changed\n"
        for n in ("a.txt", "b.txt", "c.txt")
    )
    proposal = await propose(ApplyPatchTool(), ctx, patch=patch)
    (ws / "c.txt").write_text("c.txt edited by someone\n")
    with pytest.raises(ToolError, match=r"Nothing was written: c\.txt changed"):
        await ApplyPatchTool().apply(proposal, ctx)
    assert (ws / "a.txt").read_text() == "a.txt\n"
    assert (ws / "b.txt").read_text() == "b.txt\n"
    assert sorted(os.listdir(ws)) == ["a.txt", "b.txt", "c.txt", "notes.txt", "src"]


async def test_a_failure_in_the_middle_of_the_commit_puts_every_file_back(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("a.txt", "b.txt", "c.txt"):
        (ws / name).write_text(f"{name}\n")
    ctx = context(ws)
    for name in ("a.txt", "b.txt", "c.txt"):
        await read(ctx, name)
    patch = "".join(f"--- a/{n}\n+++ b/{n}\n@@ -1 +1 @@\n-{n}\n+{n}!\n" for n in ("a.txt", "b.txt"))
    patch += "--- /dev/null\n+++ b/new/d.txt\n@@ -0,0 +1 @@\n+d\n"
    patch += "--- a/c.txt\n+++ b/c.txt\n@@ -1 +1 @@\n-c.txt\n+c.txt!\n"
    proposal = await propose(ApplyPatchTool(), ctx, patch=patch)
    real_rename = os.rename
    calls = {"n": 0}

    def failing_rename(*args: Any, **kwargs: Any) -> None:
        calls["n"] += 1
        if calls["n"] == 3:  # a.txt, b.txt, then c.txt (d.txt is linked, not renamed)
            raise OSError(28, "No space left on device")
        real_rename(*args, **kwargs)

    monkeypatch.setattr(os, "rename", failing_rename)
    with pytest.raises(ToolError, match=r"Nothing was written.*every file is as it was"):
        await ApplyPatchTool().apply(proposal, ctx)
    monkeypatch.undo()
    for name in ("a.txt", "b.txt", "c.txt"):
        assert (ws / name).read_text() == f"{name}\n"
    assert not (ws / "new").exists()
    assert sorted(os.listdir(ws)) == ["a.txt", "b.txt", "c.txt", "notes.txt", "src"]


async def test_a_hunk_that_does_not_fit_says_what_was_expected(ws: Path) -> None:
    ctx = context(ws)
    await read(ctx, "notes.txt")
    patch = "--- a/notes.txt\n+++ b/notes.txt\n@@ -1,2 +1,2 @@\n one\n-TWO\n+2\n"
    message = await refused(ApplyPatchTool(), ctx, patch=patch)
    assert "Hunk 1 of notes.txt" in message and "Expected:\none\nTWO" in message
    prose = await refused(ApplyPatchTool(), ctx, patch="just some words")
    assert prose.startswith("The patch holds no file")
    rename = "diff --git a/notes.txt b/n.txt\nrename from notes.txt\nrename to n.txt\n"
    assert "does not do renames" in await refused(ApplyPatchTool(), ctx, patch=rename)


async def test_a_patch_with_wrong_counts_and_moved_lines_still_applies_exactly(ws: Path) -> None:
    (ws / "notes.txt").write_text("zero\none\n\ntwo\nthree\n")
    ctx = context(ws)
    await read(ctx, "notes.txt")
    # Counts wrong, line numbers off by one, a blank context line without its space, no a/ b/.
    patch = (
        "Here it is:\n--- notes.txt\n+++ notes.txt\n@@ -1,9 +1,9 @@\n one\n\n-two\n+TWO\n three\n"
    )
    proposal = await propose(ApplyPatchTool(), ctx, patch=patch)
    await ApplyPatchTool().apply(proposal, ctx)
    assert (ws / "notes.txt").read_text() == "zero\none\n\nTWO\nthree\n"


async def test_no_newline_at_end_of_file_is_honoured(ws: Path) -> None:
    (ws / "tail.txt").write_text("a\nb")
    ctx = context(ws)
    await read(ctx, "tail.txt")
    proposal = await propose(EditFileTool(), ctx, path="tail.txt", old_text="b", new_text="c")
    assert proposal.edits[0].diff.endswith(
        "-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"
    )
    marker = "\\ No newline at end of file\n"
    patch = f"--- a/tail.txt\n+++ b/tail.txt\n@@ -1,2 +1,3 @@\n a\n-b\n{marker}+b\n+c\n"
    outcome = await ApplyPatchTool().apply(await propose(ApplyPatchTool(), ctx, patch=patch), ctx)
    assert not outcome.failed
    assert (ws / "tail.txt").read_text() == "a\nb\nc\n"


def test_every_diff_the_tools_make_applies_back_to_give_the_new_text() -> None:
    import random

    from engine.tools.diffs import file_diff
    from engine.tools.patch import apply_to_text, parse_patch

    rng = random.Random(7)
    pieces = ["x\n", "y\n", "\n", "  indented\n", "z", "tail\n"]
    for _ in range(3000):
        old = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
        lines = old.splitlines(keepends=True)
        for _ in range(rng.randint(1, 3)):
            at = rng.randint(0, len(lines))
            if lines and rng.random() < 0.5:
                del lines[min(at, len(lines) - 1)]
            else:
                lines.insert(at, rng.choice(pieces))
        new = "".join(lines)
        if new == old or "z" in old.rstrip("z") or "z" in new.rstrip("z"):
            continue  # "z" has no newline: only meaningful as the last line
        [patch] = parse_patch(file_diff("f", "modify", old, new))
        assert apply_to_text(old, patch, "f") == new, (old, new)
