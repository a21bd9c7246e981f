"""Host-wide kernel settings: a command must not change them.

When the server runs as root (as on this machine and in CI), bwrap maps the command's uid 0 to the
host's uid 0. Dropping every capability does not help for ``/proc/sys``: sysctl files are guarded
by their mode bits for the global root uid, not by capabilities, and most of them are not
namespaced (``kernel.core_pattern`` runs a program as real root on the next crash). The writes
below are harmless by construction: files are only opened for writing, and the one real write
writes back the value already there.
"""

from __future__ import annotations

from pathlib import Path

from tests.e2e.conftest import StartServer
from tests.sandbox.conftest import assert_nothing_left, python, run_calls

OPEN_FOR_WRITING = """
import os
for path in (
    '/proc/sys/kernel/core_pattern',
    '/proc/sys/kernel/printk_ratelimit',
    '/proc/sys/vm/drop_caches',
    '/proc/sys/fs/file-max',
    '/proc/sysrq-trigger',
):
    try:
        fd = os.open(path, os.O_WRONLY)  # opened, never written
    except OSError as exc:
        print('denied', path, exc.strerror)
    else:
        os.close(fd)
        print('WRITABLE', path)
"""

SAME_VALUE_WRITE = """
path = '/proc/sys/kernel/printk_ratelimit'
value = open(path).read()
try:
    with open(path, 'w') as out:
        out.write(value)  # the same value: no change, but proves the write is possible
    print('WROTE', path)
except OSError as exc:
    print('denied', path, exc.strerror)
"""


async def test_changing_host_kernel_settings(start_server: StartServer, tmp_path: Path) -> None:
    run = await run_calls(start_server, python(OPEN_FOR_WRITING), python(SAME_VALUE_WRITE))

    opened, wrote = (end["result"] for end in run.ends)
    assert "denied /proc/sys/kernel/core_pattern" in opened, (
        f"a sandboxed command can open host kernel settings for writing:\n{opened}"
    )
    assert "WRITABLE" not in opened, opened
    assert "WROTE" not in wrote, f"a sandboxed command wrote a host-wide sysctl:\n{wrote}"
    await assert_nothing_left([], tmp_path / "ws")
