"""Sessions that outlive a server, what a turn changed, and rewinding: ``agent/sessions``,
``agent/session/load``, ``agent/session/delete``, ``agent/changes`` and ``agent/rewind``."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, StrictBool

from engine.approvals import Decider
from engine.events import StopReason, ToolStatus
from engine.memory.kinds import Action, ConflictReason, RewindScope
from server.protocol.base import StrictParams, WireModel, optional


class SessionsParams(StrictParams):
    """``agent/sessions`` params: none (``{}`` or omitted)."""


class SessionInfo(WireModel):
    """One session of this workspace (saved by this server or an earlier one)."""

    session_id: str = Field(description="Pass it as agent/chat sessionId to continue it.")
    title: str = Field(description="The first line of its first prompt.")
    turns: int = Field(description="Turns started so far.")
    created: str = Field(description="When it started (ISO 8601, UTC).")
    last_activity: str = Field(description="When a turn last started or ended (ISO 8601, UTC).")
    model: str | None = Field(description="The model its last turn used.")
    open: bool = Field(description="Whether this server has it open (it continues at once).")


class SessionsResult(WireModel):
    """``agent/sessions`` result: the most recently active first."""

    sessions: list[SessionInfo]


class SessionParams(StrictParams):
    """``agent/session/load`` and ``agent/session/delete`` params."""

    session_id: str = Field(min_length=1, description="The session.")


class HistoryToolCall(WireModel):
    """One tool call of a saved turn."""

    id: str = Field(description="The call's toolCallId.")
    name: str = Field(description="The tool's name.")
    arguments: dict[str, Any] = Field(description="The arguments the model wrote.")
    status: ToolStatus | None = Field(description="How it ended; null: the server stopped first.")
    exit_code: int | None = Field(description="The process exit code; null when none ran.")
    result: str | None = Field(description="Exactly what the model received.")
    decided_by: Decider | None = Field(
        description="Who let it run or stopped it (see the audit log); null: never asked."
    )


class HistoryTurn(WireModel):
    """One turn of a saved session."""

    turn_id: str = Field(description="The turn's id (agent/changes and agent/rewind take it).")
    prompt: str = Field(description="The user's message.")
    text: str = Field(description="The answer's text (the turn's content deltas).")
    stop_reason: StopReason | None = Field(
        description="Why it ended; null: the server stopped during it (it was lost in flight)."
    )
    tool_calls: list[HistoryToolCall]
    started: str = Field(description="When it started (ISO 8601, UTC).")
    changed_files: bool = Field(
        description="Whether it has a checkpoint (it ran a command or an edit): agent/changes "
        "says what it changed."
    )
    rewound: bool = Field(description="Rewound out of the conversation (agent/rewind).")


class SessionLoadResult(WireModel):
    """``agent/session/load`` result: the session is open in this server, with its history."""

    session_id: str
    title: str
    turns: list[HistoryTurn] = Field(description="Every turn, oldest first.")
    allowed_tools: list[str] = Field(
        description="Tools allowed for the session in this server (a session resumed from an "
        "earlier server starts with none: its grants are never revived)."
    )


class SessionDeleteResult(WireModel):
    """``agent/session/delete`` result."""

    deleted: bool = Field(description="False when there was no such session.")


class ChangesParams(StrictParams):
    """``agent/changes`` params."""

    session_id: str = Field(min_length=1, description="The session.")
    turn_id: str = Field(min_length=1, description="The turn (from agent/stream or a result).")


class FileChangeInfo(WireModel):
    """One file a turn changed."""

    path: str = Field(description="Relative to the workspace, / separated.")
    action: Action = Field(description="created, modified or deleted.")
    diff: str = Field(
        description="A unified diff (a/ and b/ prefixes), or a line saying why "
        "none is shown (binary, too large)."
    )
    binary: bool = Field(description="True for a binary file (no line diff).")


class ChangesResult(WireModel):
    """``agent/changes`` result: what the turn changed in the workspace, command effects
    included."""

    session_id: str
    turn_id: str
    checkpoint: bool = Field(
        description="False when the turn changed nothing (no command or edit ran), or no "
        "checkpoint could be taken."
    )
    files: list[FileChangeInfo]


class RewindParams(StrictParams):
    """``agent/rewind`` params."""

    session_id: str = Field(min_length=1, description="The session.")
    turn_id: str = Field(min_length=1, description="Rewind to just before this turn.")
    scope: RewindScope = Field(
        description="files: the workspace; conversation: the session's history (the model "
        "forgets this turn and later ones); both."
    )
    force: StrictBool = Field(
        default=False,
        description="Also write files changed by hand since, and auto-run paths (listed in "
        "conflicts when false).",
    )


class RewindFile(WireModel):
    path: str
    action: Literal["restored", "deleted"] = Field(
        description="restored: written back as it was; deleted: the turns created it."
    )


class RewindConflict(WireModel):
    path: str
    reason: ConflictReason = Field(
        description="changed_by_hand: changed outside the session's turns since; autorun: an "
        "auto-run path (.vscode, hooks, ...)."
    )
    detail: str


class RewindSkipped(WireModel):
    path: str
    detail: str = Field(
        description="Why it is never written (a symbolic link on the way, not "
        "captured, changed meanwhile...)."
    )


class RewindResult(WireModel):
    """``agent/rewind`` result. With conflicts and no ``force`` nothing is applied at all."""

    applied: bool = Field(description="Whether the rewind was carried out.")
    files: list[RewindFile] = Field(description="What was written back.")
    conflicts: list[RewindConflict] = Field(
        description="Files that need force (when applied is false, nothing was written)."
    )
    skipped: list[RewindSkipped] = Field(description="Files that were not written, and why.")
    conversation: bool = Field(description="Whether the conversation was rewound.")
    checkpoint: str | None = optional(
        "The checkpoint of the workspace taken just before the rewind wrote anything."
    )


class MemoryUnavailableData(WireModel):
    """``data`` of -32600 when the data folder (sessions, checkpoints) cannot be used."""

    reason: Literal["memory_unavailable"] = "memory_unavailable"
    detail: str = Field(description="What failed (the folder and the system's error).")
