"""Where Gatehouse keeps what outlives a server: the user's data folder.

``$GATEHOUSE_DATA_DIR`` when set, else the platform's user data folder
(``~/.local/share/gatehouse`` on Linux, through platformdirs). Sessions, checkpoints, the audit
log and user rules live under it; nothing in a workspace is ever used for them (approved code can
write the workspace). Created on first use with mode 0700.
"""

from __future__ import annotations

import os
from pathlib import Path

ENV = "GATEHOUSE_DATA_DIR"


def exposed_in(workspace: Path, folder: Path | None = None) -> str | None:
    """Why the data folder (``folder``, default :func:`data_dir`) cannot be trusted while serving
    ``workspace``: it lies inside it, where approved code can write (None: it does not). Nothing
    Gatehouse trusts outside the sandbox may be written from inside it, so then no user rules are
    read and no sessions or checkpoints are kept there."""
    root = os.path.realpath(folder if folder is not None else data_dir(create=False))
    inside = os.path.realpath(workspace)
    if root == inside or root.startswith(inside.rstrip("/") + "/"):
        return (
            f"the data folder {root} is inside the workspace, where approved code can write it; "
            f"set {ENV} to a folder outside the workspace"
        )
    return None


def data_dir(create: bool = True) -> Path:
    """The data folder (created 0700 unless ``create`` is false)."""
    configured = os.environ.get(ENV)
    if configured:
        folder = Path(configured).expanduser()
    else:
        import platformdirs  # noqa: PLC0415 - only when first needed

        folder = Path(platformdirs.user_data_dir("gatehouse", appauthor=False))
    if create:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    return folder
