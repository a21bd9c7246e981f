"""The memory's wire vocabulary, kept light: the protocol imports these literals."""

from __future__ import annotations

from typing import Literal

Action = Literal["created", "modified", "deleted"]
"""What a turn did to a file."""

ConflictReason = Literal["changed_by_hand", "autorun"]
"""Why a rewind needs ``force`` for a file: someone else changed it after the turn, or it is an
auto-run path."""

RewindScope = Literal["files", "conversation", "both"]
"""What ``agent/rewind`` rewinds."""
