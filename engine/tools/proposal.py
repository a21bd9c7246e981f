"""What an edit call would write, as a person reviews it, and the checks every file passes.

:class:`Proposal` is the result of :meth:`engine.tools.edits.EditTool.propose`: each file's new
text, its diff and whether it is protected. The checks here run twice, when the call is proposed
and again right before the write: the file was read in this session and has not changed since
(the read ledger), and the editor does not show it with unsaved changes.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from engine.edits import EditAction, FileEdit
from engine.tools.base import ToolContext, ToolError
from engine.tools.diffs import file_diff
from engine.tools.filetext import FileText, TextFormat, read_text
from engine.tools.protected import Protection
from engine.workspace_fs import WorkspaceFS

NEW_FILE = TextFormat(newlines="mixed")
"""A new file: UTF-8, its line endings as written."""


@dataclass(frozen=True)
class PlannedFile:
    """One file of a proposal."""

    edit: FileEdit
    format: TextFormat
    expected: str | None
    """The digest the file has now (modify, delete): it must still have it when written."""
    summary: str
    executable: bool = False


@dataclass(frozen=True)
class Proposal:
    """What an edit call would write, as a person reviews it."""

    files: tuple[PlannedFile, ...]

    @property
    def edits(self) -> tuple[FileEdit, ...]:
        return tuple(f.edit for f in self.files)

    @property
    def protected(self) -> bool:
        """Whether it changes an auto-run path (always asked about)."""
        return any(f.edit.protected is not None for f in self.files)


def unsaved(
    ctx: ToolContext, root: str, path: str, disk_text: Callable[[], str]
) -> ToolError | None:
    if ctx.documents is None:
        return None
    if not ctx.documents.has_unsaved_changes(os.path.join(root, *path.split("/")), disk_text):
        return None
    return ToolError(
        f"{path} is open in the editor with unsaved changes: it was not changed, so that it does "
        "not diverge from what the user sees. Ask the user to save or discard their changes, "
        "then read it again."
    )


def check_read(ctx: ToolContext, path: str, current: str) -> None:
    seen = ctx.reads.get(path)
    if seen is None:
        raise ToolError(
            f"You have not read {path} in this session: read it with read_file first, then "
            "change it (an edit must start from what the file holds now)."
        )
    if seen != current:
        raise ToolError(f"{path} changed since you read it: read it again, then retry.")


def existing(fs: WorkspaceFS, path: str, ctx: ToolContext) -> FileText:
    """A file to change: read by descriptor, read by the model before, unchanged since, and
    not open with unsaved changes."""
    current = read_text(fs, path)
    check_read(ctx, current.path, current.digest)
    refusal = unsaved(ctx, str(fs.root), current.path, lambda: current.disk_text)
    if refusal is not None:
        raise refusal
    return current


def exists(fs: WorkspaceFS, path: str) -> bool:
    try:
        fs.resolve(path, must_exist=True)
    except ToolError:
        return False
    return True


def plan_file(
    protection: Protection,
    path: str,
    action: EditAction,
    current: FileText | None,
    new_text: str | None,
    *,
    summary: str,
    executable: bool = False,
) -> PlannedFile:
    fmt = current.format if current is not None else NEW_FILE
    if new_text is not None:
        fmt.to_disk(new_text, path)  # too large, or not encodable: refused now, not after asking
    old_text = current.text if current is not None else None
    diff = file_diff(path, action, old_text, new_text)
    if executable:  # the person sees that the new file will be executable, as git shows it
        diff = "new file mode 100755\n" + diff
    edit = FileEdit(
        path,
        action,
        diff,
        old_text,
        new_text,
        protection.reason(path),
    )
    expected = current.digest if current is not None else None
    return PlannedFile(edit, fmt, expected, summary, executable)
