"""What isolation an approved ``python``/``terminal`` call runs under, as reported to users.

The result of :func:`probe` belongs in the initialize result, on every approval prompt and in every
tool result (``SandboxInfo.wire()``), so a user always knows what a command could reach.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

IsolationLevel = Literal["strong", "standard", "limits-only", "none"]
"""``strong``: namespaces (bubblewrap); ``standard``: Landlock + seccomp; ``limits-only``: resource
limits without file or network isolation; ``none``: no OS isolation at all."""


@dataclass(frozen=True)
class SandboxInfo:
    """The isolation a command runs under."""

    level: IsolationLevel
    network: bool
    """True when the child can reach the network."""
    reason: str
    """One sentence a user can read: why this level."""


UNSANDBOXED = SandboxInfo(
    "none",
    True,
    "bypassPermissions is on: code runs without the sandbox (the environment is still scrubbed).",
)


ProtectedAction = Literal["quarantined", "restored", "removed"]
"""What was done about an auto-run path a command changed (the wire's ``protected[].action``)."""


@dataclass(frozen=True)
class ProtectedChange:
    """What was done about one auto-run path after a command (see :mod:`sandbox.guard`)."""

    path: str
    """Relative to the workspace."""
    action: ProtectedAction
    detail: str
