"""The edit tools: ``edit_file``, ``write_file`` and ``apply_patch``.

An edit runs in two steps, so that a person reviews exactly what will be written:

1. :meth:`EditTool.propose` checks the call and computes every file's new text and its diff
   (nothing is written). A file that exists must have been read in this session with
   ``read_file`` and be unchanged since (the read ledger), and must not be open in the editor
   with unsaved changes. Any problem fails the call here, with a message that helps the model
   retry, before anyone is asked.
2. :meth:`EditTool.apply` writes what was approved (or the user's own version of a file) through
   :func:`engine.tools.filewrites.commit`: the same checks again right before the write, then
   every file or none. This is the one way an approved edit reaches the disk.

Paths are confined to the workspace exactly as the read-only tools' (by descriptor, links
resolved inside it); auto-run paths are always asked about (:mod:`engine.tools.protected`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Awaitable, Mapping
from typing import Any, ClassVar

from pydantic import Field

from engine.edits import AppliedEdit, digest
from engine.tools.base import Tool, ToolArgs, ToolContext, ToolError, ToolKind, ToolOutcome
from engine.tools.diffs import diff_counts, file_diff, unified_diff
from engine.tools.filewrites import FileChange, commit
from engine.tools.matching import find_all, line_numbers, listed, not_found, too_many
from engine.tools.patch import apply_to_text, parse_patch
from engine.tools.proposal import (
    PlannedFile,
    Proposal,
    check_read,
    existing,
    exists,
    plan_file,
    unsaved,
)
from engine.tools.protected import Protection
from engine.workspace_fs import WorkspaceFS

# --- argument models -------------------------------------------------------------------------


class EditFileArgs(ToolArgs):
    path: str = Field(description="The file to change, relative to the workspace root.")
    old_text: str = Field(
        description="The exact text to replace, copied from read_file (indentation and line "
        "breaks included). It must occur exactly once unless replace_all is true."
    )
    new_text: str = Field(description="The text to put in its place.")
    replace_all: bool = Field(
        default=False, description="Replace every occurrence of old_text, not just one."
    )


class WriteFileArgs(ToolArgs):
    path: str = Field(description="The file to create or replace, relative to the workspace root.")
    content: str = Field(description="The whole new content of the file.")


class ApplyPatchArgs(ToolArgs):
    patch: str = Field(
        min_length=1,
        description="A unified diff in git style: for each file '--- a/PATH' and '+++ b/PATH' "
        "then '@@ -l,s +l,s @@' hunks of ' ', '-' and '+' lines. '--- /dev/null' creates a "
        "file, '+++ /dev/null' deletes one. Every file changes, or none does.",
    )


# --- the tools -------------------------------------------------------------------------------


class EditTool(Tool):
    """A tool that changes files: proposed first (with diffs), written once approved."""

    kind: ClassVar[ToolKind] = "edit"

    def plan(
        self, args: Any, ctx: ToolContext, fs: WorkspaceFS, protection: Protection
    ) -> list[PlannedFile]:
        """The files the call changes (in a worker thread); :class:`ToolError` if it cannot."""
        raise NotImplementedError

    async def propose(self, args: Any, ctx: ToolContext) -> Proposal:
        """What the call would write; nothing is written."""

        def planned() -> Proposal:
            with WorkspaceFS(ctx.workspace) as fs:
                protection = Protection(fs.root, ctx.box)
                return Proposal(tuple(self.plan(args, ctx, fs, protection)))

        return await asyncio.to_thread(planned)

    async def run(self, args: Any, ctx: ToolContext) -> ToolOutcome:
        return await self.apply(await self.propose(args, ctx), ctx)

    async def apply(
        self,
        proposal: Proposal,
        ctx: ToolContext,
        user_versions: Mapping[str, str] | None = None,
    ) -> ToolOutcome:
        """Write an approved proposal; ``user_versions`` (path -> text) are the user's own
        versions of some of its files, written instead of the proposal's. Every check is made
        again first; then every file is written, or none (:class:`ToolError`)."""
        versions = dict(user_versions or {})
        changeable = {f.edit.path for f in proposal.files if f.edit.action != "delete"}
        if not set(versions) <= changeable:
            raise ToolError(
                "Nothing was written: the editor sent a file this call does not change."
            )
        changes: list[FileChange] = []
        finals: list[str | None] = []
        for planned in proposal.files:
            edit = planned.edit
            final = edit.new_text
            if edit.path in versions:
                final = planned.format.to_internal(versions[edit.path])
            data = None if final is None else planned.format.to_disk(final, edit.path)
            finals.append(final)
            changes.append(
                FileChange(edit.path, edit.action, data, planned.expected, planned.executable)
            )

        def verify(change: FileChange, current: bytes) -> None:
            # ``current`` has the digest the proposal was made from (commit checked it): the
            # ledger must still say the model read that, and the editor must show it.
            assert change.expected is not None
            check_read(ctx, change.path, change.expected)
            encoding = next(p.format.encoding for p in proposal.files if p.edit.path == change.path)

            def disk_text() -> str:
                return current.decode(encoding, errors="replace").removeprefix("\ufeff")

            refusal = unsaved(ctx, os.path.realpath(ctx.workspace), change.path, disk_text)
            if refusal is not None:
                raise ToolError(f"Nothing was written: {refusal}")

        def write() -> list[str | None]:
            commit(ctx.workspace, changes, verify)
            if ctx.documents is not None:  # the editor shows the old text until it reloads
                root = os.path.realpath(ctx.workspace)
                for change in changes:
                    ctx.documents.written(os.path.join(root, *change.path.split("/")))
            return [None if c.data is None else digest(c.data) for c in changes]

        if ctx.before_change is not None:
            await ctx.before_change(tuple(c.path for c in changes))
        digests = await asyncio.to_thread(write)
        return self._written(proposal, changes, finals, digests, ctx)

    @staticmethod
    def _written(
        proposal: Proposal,
        changes: list[FileChange],
        finals: list[str | None],
        digests: list[str | None],
        ctx: ToolContext,
    ) -> ToolOutcome:
        applied: list[AppliedEdit] = []
        lines: list[str] = []
        told: list[str] = []
        for planned, final, written in zip(proposal.files, finals, digests, strict=True):
            edit = planned.edit
            if written is None:
                ctx.reads.forget(edit.path)
            else:
                ctx.reads.record(edit.path, written)  # the model knows what is there now
            by_user = final != edit.new_text
            diff = file_diff(edit.path, edit.action, edit.old_text, final) if by_user else edit.diff
            applied.append(AppliedEdit(edit.path, edit.action, diff, by_user))
            added, removed = diff_counts(diff)
            lines.append(f"- {edit.action} {edit.path} (+{added} -{removed}): {planned.summary}")
            if by_user:
                change_diff = unified_diff(
                    edit.new_text or "",
                    final or "",
                    f"a/{edit.path} (your proposal)",
                    f"b/{edit.path} (what the user wrote)",
                )
                told.append(change_diff)
        text = "Done:\n" + "\n".join(lines)
        if told:
            text += (
                "\n\nThe user changed your proposal before accepting it. What was written is "
                "their version, which differs from yours as follows; the files hold it now, so "
                "build on it and do not undo their changes:\n" + "\n".join(told)
            )
        return ToolOutcome(text=text, edits=tuple(applied))


class EditFileTool(EditTool):
    name: ClassVar[str] = "edit_file"
    description: ClassVar[str] = (
        "Replace exact text in a file you have read with read_file: old_text must match the "
        "file exactly once (or every time with replace_all)."
    )
    args_model: ClassVar[type[ToolArgs]] = EditFileArgs

    def plan(
        self, args: Any, ctx: ToolContext, fs: WorkspaceFS, protection: Protection
    ) -> list[PlannedFile]:
        assert isinstance(args, EditFileArgs)
        current = existing(fs, args.path, ctx)
        old = current.format.to_internal(args.old_text)
        new = current.format.to_internal(args.new_text)
        if not old:
            raise ToolError(
                "old_text is empty: copy the text to replace from the file (to add text, "
                "include the line it goes after); use write_file to replace the whole file."
            )
        if old == new:
            raise ToolError("old_text and new_text are the same: nothing would change.")
        offsets = find_all(current.text, old)
        if not offsets:
            raise ToolError(not_found(current.text, old, current.path))
        if len(offsets) > 1 and not args.replace_all:
            raise ToolError(too_many(current.text, offsets, current.path))
        if args.replace_all:
            text = current.text.replace(old, new)
        else:
            at = offsets[0]
            text = current.text[:at] + new + current.text[at + len(old) :]
        numbers = line_numbers(current.text, offsets)
        where = f"line {numbers[0]}" if len(numbers) == 1 else f"lines {listed(numbers)}"
        count = f"{len(offsets)} occurrences" if len(offsets) > 1 else "1 occurrence"
        summary = f"replaced {count} of old_text ({where})"
        return [plan_file(protection, current.path, "modify", current, text, summary=summary)]


class WriteFileTool(EditTool):
    name: ClassVar[str] = "write_file"
    description: ClassVar[str] = (
        "Create a file with the given content, or replace all of a file you have read with "
        "read_file."
    )
    args_model: ClassVar[type[ToolArgs]] = WriteFileArgs

    def plan(
        self, args: Any, ctx: ToolContext, fs: WorkspaceFS, protection: Protection
    ) -> list[PlannedFile]:
        assert isinstance(args, WriteFileArgs)
        path = "/".join(fs.resolve(args.path, must_exist=False))
        if not exists(fs, path):
            return [plan_file(protection, path, "create", None, args.content, summary="created")]
        current = existing(fs, path, ctx)
        new = current.format.to_internal(args.content)
        if current.text.endswith("\n") and new and not new.endswith("\n"):
            new += "\n"  # the file keeps its final newline
        elif current.text and not current.text.endswith("\n") and new.endswith("\n"):
            new = new[:-1]  # and keeps ending without one
        if new == current.text:
            raise ToolError(f"{current.path} already holds exactly this content: nothing to do.")
        summary = "replaced its content"
        return [plan_file(protection, current.path, "modify", current, new, summary=summary)]


class ApplyPatchTool(EditTool):
    name: ClassVar[str] = "apply_patch"
    description: ClassVar[str] = (
        "Apply a multi-file unified diff (git style) to files you have read with read_file; it "
        "may create and delete files. Every file changes, or none does."
    )
    args_model: ClassVar[type[ToolArgs]] = ApplyPatchArgs

    def plan(
        self, args: Any, ctx: ToolContext, fs: WorkspaceFS, protection: Protection
    ) -> list[PlannedFile]:
        assert isinstance(args, ApplyPatchArgs)
        planned: list[PlannedFile] = []
        seen: set[str] = set()
        for patch in parse_patch(args.patch):
            action = patch.action
            path = "/".join(fs.resolve(patch.path, must_exist=action != "create"))
            if path in seen:
                raise ToolError(f"{path} appears twice in the patch: put all its hunks together.")
            seen.add(path)
            if action == "create":
                if exists(fs, path):
                    raise ToolError(
                        f"The patch creates {path} (--- /dev/null), but it exists: patch it as "
                        f"a change (--- a/{path}) after reading it."
                    )
                text = apply_to_text("", patch, path)
                created = plan_file(
                    protection,
                    path,
                    "create",
                    None,
                    text,
                    summary="created",
                    executable=patch.executable,
                )
                planned.append(created)
                continue
            current = existing(fs, path, ctx)
            if action == "delete":
                if patch.hunks and apply_to_text(current.text, patch, path) != "":
                    raise ToolError(
                        f"The patch deletes {path} (+++ /dev/null), but its hunks do not remove "
                        "all of it: read it again and delete every line, or leave the hunks out."
                    )
                planned.append(
                    plan_file(protection, path, "delete", current, None, summary="deleted")
                )
                continue
            text = apply_to_text(current.text, patch, path)
            if text == current.text:
                raise ToolError(f"The patch does not change {path}.")
            summary = f"{len(patch.hunks)} hunk(s) applied"
            planned.append(plan_file(protection, path, "modify", current, text, summary=summary))
        return planned


class WrittenBeforeCancel(asyncio.CancelledError):
    """The turn was cancelled while an approved edit was being written. A write is never cut off
    half-way: it was finished, and :attr:`outcome` says what it did."""

    def __init__(self, outcome: ToolOutcome) -> None:
        super().__init__()
        self.outcome = outcome


async def uncut(write: Awaitable[ToolOutcome]) -> ToolOutcome:
    """Await an edit's write; on cancel, let it finish and raise :class:`WrittenBeforeCancel`."""
    task = asyncio.ensure_future(write)
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        while not task.done():
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(task)
        raise WrittenBeforeCancel(task.result()) from None


__all__ = [
    "EDIT_TOOLS",
    "ApplyPatchTool",
    "EditFileTool",
    "EditTool",
    "PlannedFile",
    "Proposal",
    "WriteFileTool",
    "WrittenBeforeCancel",
    "uncut",
]

EDIT_TOOLS: tuple[Tool, ...] = (EditFileTool(), WriteFileTool(), ApplyPatchTool())
"""The edit tools, ready to register."""
