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

**The strong level's watcher.** bubblewrap's first process clones the namespace's init, which
first waits (on an eventfd) until its parent has written its user mappings: a parent killed in
between leaves the init waiting forever, out of reach of any death signal. So at the strong
level the lifeline's ``sh`` starts a watcher just before it becomes the chain: a ``sh`` whose
death signal (``setpriv``) fires when the chain's first process dies, and whose trap then kills
the chain's whole process group (``kill -KILL -PGID``): the namespace's init is in it until
the sandbox is set up (bubblewrap's ``--new-session`` then moves it out; from there on the
handshake below covers it), and the namespace goes with its init. A watcher whose parent is
already gone when it starts does the same at once. The death signal is SIGURG, whose default
action is to be ignored: one that arrives before the trap is set is lost, never fatal, and the
parent check that follows the trap sees the parent gone (with SIGTERM, a parent killed in that
first millisecond killed the watcher before it could act: about one kill in a hundred in the
crash test's start-up window).

**The strong level's handshake.** bubblewrap's first process (the lifeline's chain) clones the
namespace's init, and that init arms its own ``--die-with-parent`` only after setting the
sandbox up. A server killed in between kills the outer bwrap (the lifeline) before the init is
tied to it: the init and the command then live on, re-parented (the crash test caught it, about
one kill in ten during start-up). So the first program inside the sandbox is :data:`HANDSHAKE`:
it writes a newline on one inherited pipe (``ready``) and waits for the server's newline on
another (``go``), then becomes the command. The server answers only after it read ``ready``:
by then the init had armed its death signal while its parent, the outer bwrap, was alive (the
outer one only dies after the server). A server that died before answering closed its end of
``go``, so the read sees end-of-file and the handshake exits 125: the command never starts and
the init, left without children, exits. The descriptors' numbers come in ``GATEHOUSE_HANDSHAKE``
(removed before the command starts). They are not single digits, which POSIX ``sh`` cannot
name in a redirection, so the handshake opens them again through ``/proc/self/fd`` (opening an
anonymous pipe there never waits for the other end); the inherited copies stay open in the
command, harmless once the server has closed its ends.
"""

from __future__ import annotations

import os
import shlex

HANDSHAKE_ENV = "GATEHOUSE_HANDSHAKE"
"""``ready,go``: the handshake's descriptors (the ends the command's side holds)."""
HANDSHAKE_REFUSED = 125
HANDSHAKE = (
    f"r=${{{HANDSHAKE_ENV}%,*}} g=${{{HANDSHAKE_ENV}#*,}}; unset {HANDSHAKE_ENV}; "
    f'echo >"/proc/self/fd/$r" && read -r _ <"/proc/self/fd/$g" || exit {HANDSHAKE_REFUSED}; '
    'exec "$@"'
)
"""Run inside the sandbox before the command (see the module docs)."""

CHECK = 'read -r _ _ _ parent _ < /proc/self/stat; [ "$parent" = "$1" ] || exit 125; shift; '
"""The parent check (``$1``: the server's pid); the gate script or ``exec "$@"`` follows."""


WATCHER = (
    'trap \'kill -KILL "-$1"; [ -z "$!" ] || kill -KILL "$!"; exit 0\' URG; '
    "read -r _ _ _ parent _ < /proc/self/stat; "
    '[ "$parent" = "$1" ] || { kill -KILL "-$1"; exit 0; }; '
    "sleep 2147483647 & wait"
)
"""The strong level's watcher (``$1``: the chain's pid, the leader of its process group as the
runner starts it): when the chain's first process dies (the server died, or the command ended)
it kills that process group and its own ``sleep``. It never signals a group the chain does not
lead (a chain started without a session of its own: the probe's self-test)."""


def lifeline_args(
    setpriv: str | None, then: str = 'exec "$@"', *, watch: bool = False
) -> list[str]:
    """The head of a command's chain that ties it to this server (empty without ``setpriv``);
    ``then`` is the rest of the ``sh`` script (it must end by exec'ing ``"$@"``). ``watch`` (the
    strong level): a watcher is started just before that ``exec`` (see the module docs)."""
    if setpriv is None:
        return []
    script = CHECK + then
    if watch:
        assert script.endswith('exec "$@"')
        watcher = (
            f"{shlex.quote(setpriv)} --pdeathsig URG /bin/sh -c {shlex.quote(WATCHER)} "
            'gatehouse-watch "$$" </dev/null >/dev/null 2>&1 & '
        )
        script = script.removesuffix('exec "$@"') + watcher + 'exec "$@"'
    return [
        setpriv,
        "--pdeathsig",
        "KILL",
        "/bin/sh",
        "-c",
        script,
        "gatehouse-lifeline",
        str(os.getpid()),
    ]


def handshake_args() -> list[str]:
    """The program inside the strong sandbox that waits for the server (argv follows)."""
    return ["/bin/sh", "-c", HANDSHAKE, "gatehouse-handshake"]
