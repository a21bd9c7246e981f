"""Keeping model-supplied paths inside the workspace.

Every tool that touches the file system goes through :func:`resolve_in_workspace`: it turns what
the model wrote (relative to the workspace, or absolute) into a real path (every symbolic link
resolved) and refuses anything that ends up outside the workspace, whether through ``..``, an
absolute path elsewhere or a symbolic link anywhere in the chain. A refusal is a
:class:`~engine.tools.base.ToolError`, so the model sees why and can correct itself.

Tools never open the returned path by name: :mod:`engine.workspace_fs` opens every component by
descriptor, so a symbolic link swapped in after the check cannot lead outside.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

from engine.workspace_fs import WorkspaceFS


def resolve_in_workspace(workspace: Path, path: str | None, *, must_exist: bool = True) -> Path:
    """Resolve ``path`` (relative to ``workspace``, or absolute) to a real path inside it.

    ``None``, an empty or whitespace-only path, and ``"."`` mean the workspace itself. Raises
    :class:`ToolError` when the path contains a NUL byte, escapes the workspace (through ``..``,
    an absolute path elsewhere, or a symbolic link whose target is outside), or, with
    ``must_exist``, does not exist. Resolution is the one :class:`~engine.workspace_fs.WorkspaceFS`
    does (by descriptor); tools that open what they resolve use that class directly, since a
    path checked here can be swapped before it is opened.
    """
    with WorkspaceFS(workspace) as fs:
        return fs.root.joinpath(*fs.resolve(path, must_exist=must_exist))


def display_path(workspace: Path, path: Path) -> str:
    """``path`` relative to the workspace as a POSIX string (``"."`` for the workspace itself).

    ``path`` may be real (as :func:`resolve_in_workspace` returns it) or written under the
    workspace as given; a path outside the workspace is returned as an absolute POSIX string.
    """
    bases = [Path(os.path.realpath(workspace)), Path(os.path.abspath(workspace))]
    target = Path(os.path.abspath(path))
    for base in bases:
        if target.is_relative_to(base):
            relative = target.relative_to(base)
            return PurePosixPath(*relative.parts).as_posix() if relative.parts else "."
    return target.as_posix()
