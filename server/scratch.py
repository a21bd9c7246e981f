"""The server's scratch folder, and the folders of servers that died without removing theirs.

Each server makes one private folder (0700) in the temporary directory, named after its pid:
``gatehouse-<pid>-<random>``. It is removed at exit (also after SIGTERM); a server killed with
SIGKILL cannot, so every server, when it starts, removes the folders whose owner process is gone.
A folder whose pid is alive (its owner, or a process that reused the pid) is never touched, nor is
one owned by another user, nor a symlink.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import stat
import tempfile
import threading
from pathlib import Path

from sandbox.cgroups import pid_alive

logger = logging.getLogger(__name__)

_NAME = re.compile(r"gatehouse-(\d+)-[A-Za-z0-9_]+")


def make_scratch_root() -> Path:
    """This server's private folder."""
    return Path(tempfile.mkdtemp(prefix=f"gatehouse-{os.getpid()}-"))


def reap_stale(parent: Path | None = None) -> list[Path]:
    """Remove the scratch folders of dead servers in ``parent`` (default: the temporary
    directory); returns what was removed."""
    parent = parent or Path(tempfile.gettempdir())
    removed: list[Path] = []
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return removed
    for entry in entries:
        match = _NAME.fullmatch(entry.name)
        if match is None or pid_alive(int(match.group(1))):
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
            continue
        shutil.rmtree(entry.path, ignore_errors=True)
        removed.append(Path(entry.path))
    if removed:
        logger.info("removed %d scratch folder(s) of servers that are gone", len(removed))
    return removed


def reap_stale_in_background() -> None:
    """:func:`reap_stale` on a daemon thread: start-up does not wait for it."""
    threading.Thread(target=reap_stale, name="gatehouse-reap", daemon=True).start()
