"""Protections for the server process itself."""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import sys

logger = logging.getLogger(__name__)

_PR_SET_DUMPABLE = 4


def make_non_dumpable() -> bool:
    """Stop same-user processes (the commands we run among them) from reading this process's
    memory and ``/proc/<pid>/environ``, where the secrets the children never get still live.

    Root (or anything with CAP_SYS_PTRACE) can still read it: the strong tier drops every
    capability and hides the server's ``/proc`` entry behind a pid namespace.
    """
    if sys.platform != "linux":
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        if libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE)")
    except OSError as exc:
        logger.warning("could not make the server non-dumpable: %s", exc)
        return False
    return True
