"""What isolation an approved ``python``/``terminal`` call runs under, as reported to users.

The result of :func:`probe` belongs in the initialize result, on every approval prompt and in every
tool result (``SandboxInfo.wire()``), so a user always knows what a command could reach.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

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

    def wire(self) -> dict[str, Any]:
        """The JSON form sent to clients."""
        return {"level": self.level, "network": self.network}


_NO_ISOLATION = SandboxInfo(
    "none",
    True,
    "No OS isolation yet: code runs as the server's user with a scrubbed environment, "
    "a timeout and an output cap.",
)

UNSANDBOXED = SandboxInfo(
    "none",
    True,
    "bypassPermissions is on: code runs without the sandbox (the environment is still scrubbed).",
)


def probe() -> SandboxInfo:
    """Find the strongest isolation this machine offers.

    This first iteration has no OS isolation tier, so it always reports level ``none``. Later
    tiers (bubblewrap, Landlock + seccomp) are detected here; the probe must stay cheap enough to
    run at start-up.
    """
    return _NO_ISOLATION
