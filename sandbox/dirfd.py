"""Writing a new file through a folder's descriptor: never through a symbolic link, never over
a file that exists (approved code may have planted either). Shared by everything that puts
files in the workspace outside the sandbox: the guard's restores, rewinds and the edit tools."""

from __future__ import annotations

import contextlib
import os

NEW_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def new_file(dir_fd: int, name: str, data: bytes, mode: int = 0o600) -> int:
    """Create ``name`` in ``dir_fd`` holding all of ``data``; its open descriptor (the caller sets
    permission bits, syncs and closes it). On failure nothing is left behind."""
    fd = os.open(name, NEW_FILE_FLAGS, mode, dir_fd=dir_fd)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(name, dir_fd=dir_fd)
        raise
    return fd
