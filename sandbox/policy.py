"""What the sandbox must enforce: isolation levels, their order, resource limits and settings."""

from __future__ import annotations

from dataclasses import dataclass, field

from sandbox.info import IsolationLevel

LEVELS: tuple[IsolationLevel, ...] = ("none", "limits-only", "standard", "strong")
"""Isolation levels, weakest first."""


def level_rank(level: IsolationLevel) -> int:
    return LEVELS.index(level)


def is_level(value: object) -> bool:
    return isinstance(value, str) and value in LEVELS


@dataclass(frozen=True)
class Limits:
    """Resource limits of one command (and everything it starts)."""

    cpu_seconds: int = 600
    memory_bytes: int = 4 << 30
    """Private writable memory (RLIMIT_DATA): stops memory bombs without breaking programs that
    reserve large address ranges they never touch (V8, the JVM, Go)."""
    file_size_bytes: int = 1 << 30
    open_files: int = 1024
    processes: int = 256
    """At most this many processes at once: the cgroup pids controller where writable (it holds
    for root too), else RLIMIT_NPROC above what the user already runs."""


@dataclass(frozen=True)
class SandboxSettings:
    network: bool = False
    """Let commands reach the network. Off by default; approval prompts say when it is on."""
    min_level: IsolationLevel = "standard"
    """Refuse code execution on machines that offer less isolation than this."""
    limits: Limits = field(default_factory=Limits)
