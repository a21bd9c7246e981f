"""Keeping model-supplied paths inside the workspace.

Every tool that touches the file system goes through :func:`resolve_in_workspace`: it turns what
the model wrote (relative to the workspace, or absolute) into a real path (every symbolic link
resolved) and refuses anything that ends up outside the workspace, whether through ``..``, an
absolute path elsewhere or a symbolic link anywhere in the chain. A refusal is a
:class:`~engine.tools.base.ToolError`, so the model sees why and can correct itself.

The check is made when the path is resolved; callers open the returned real path (which contains
no symbolic links at that moment) and should not follow links below it.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

from engine.tools.base import ToolError


def workspace_root(workspace: Path) -> Path:
    """The workspace as a real, existing absolute path (symbolic links resolved)."""
    try:
        root = workspace.resolve(strict=True)
    except (OSError, RuntimeError) as exc:
        raise ToolError(f"The workspace {str(workspace)!r} is not accessible: {exc}") from None
    if not root.is_dir():
        raise ToolError(f"The workspace {str(workspace)!r} is not a directory.")
    return root


def resolve_in_workspace(workspace: Path, path: str | None, *, must_exist: bool = True) -> Path:
    """Resolve ``path`` (relative to ``workspace``, or absolute) to a real path inside it.

    ``None``, an empty or whitespace-only path, and ``"."`` mean the workspace itself. Raises
    :class:`ToolError` when the path contains a NUL byte, escapes the workspace (through ``..``,
    an absolute path elsewhere, or a symbolic link whose target is outside), or, with
    ``must_exist``, does not exist. The returned path is absolute with every symbolic link
    resolved, so it can be opened without following links again.
    """
    root = workspace_root(workspace)
    if path is None or not path.strip():
        return root
    if "\x00" in path:
        raise ToolError("Invalid path: it contains a NUL byte.")

    candidate = Path(path)
    if not candidate.is_absolute():
        candidate = root / candidate
    # Lexical normalisation only serves the error message: did the model write a path outside,
    # or did a symbolic link take an inside-looking path outside?
    lexical = Path(os.path.normpath(candidate))
    try:
        real = Path(os.path.realpath(candidate))
    except (OSError, ValueError) as exc:
        raise ToolError(f"Invalid path {path!r}: {exc}") from None

    if not real.is_relative_to(root):
        written_inside = lexical.is_relative_to(root) or lexical.is_relative_to(
            Path(os.path.abspath(workspace))
        )
        if written_inside:
            raise ToolError(
                f"Access denied: {path!r} goes through a symbolic link that points outside the "
                f"workspace. Only files inside the workspace ({root}) can be used."
            )
        raise ToolError(
            f"Access denied: {path!r} is outside the workspace. Use a path relative to the "
            f"workspace root ({root})."
        )
    if must_exist and not os.path.exists(real):
        raise ToolError(f"No such file or directory: {path}")
    return real


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
