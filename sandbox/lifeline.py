"""A command's lifeline: it dies with the server that started it.

A server killed with SIGKILL runs no clean-up, so the kill must come from the kernel: the first
process of a command's chain is ``setpriv --pdeathsig KILL`` (util-linux), which asks the kernel
(``PR_SET_PDEATHSIG``) to SIGKILL it when the server's thread that started it dies. The setting
survives every ``exec`` of the chain (``sh``, ``prlimit``, the standard tier's launcher, bwrap,
the command), except into a set-user-ID program. A server that died *before* ``setpriv`` armed
it would never send the signal, so the next process, a POSIX ``sh``, checks that its parent is
still the server (``/proc/self/stat``) before it goes on, and exits 125 otherwise.

What the lifeline does not reach: processes the command forks (the setting is not inherited).
At the strong level they are in the command's PID namespace and die with it (bubblewrap's
``--die-with-parent``); at weaker levels a background process can outlive a killed server.
Without ``setpriv`` on the machine there is no lifeline (bubblewrap's own option still holds).
"""

from __future__ import annotations

import os

CHECK = 'read -r _ _ _ parent _ < /proc/self/stat; [ "$parent" = "$1" ] || exit 125; shift; '
"""The parent check (``$1``: the server's pid); the gate script or ``exec "$@"`` follows."""


def lifeline_args(setpriv: str | None, then: str = 'exec "$@"') -> list[str]:
    """The head of a command's chain that ties it to this server (empty without ``setpriv``);
    ``then`` is the rest of the ``sh`` script (it must end by exec'ing ``"$@"``)."""
    if setpriv is None:
        return []
    return [
        setpriv,
        "--pdeathsig",
        "KILL",
        "/bin/sh",
        "-c",
        CHECK + then,
        "gatehouse-lifeline",
        str(os.getpid()),
    ]
