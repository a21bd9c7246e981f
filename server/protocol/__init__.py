"""The Gatehouse wire contract: every message, where it is defined, and which clients use it.

Open this file to answer "where is message X defined, and who uses it": :data:`METHODS` lists every
method and notification with its params and result models and the clients that speak it (a test
checks the client lists against the clients' sources). The models live in the modules of this
package, one concern each; ``docs/schema/gatehouse.schema.json`` is generated from them
(``python -m server.protocol.schema``) and the TypeScript types of the VS Code client are
generated from that file. ``docs/protocol.md`` describes the same contract for people.

Shared literals (stop reasons, tool statuses, decisions, isolation levels) are declared once, in
``engine/`` and ``sandbox/``, and only imported here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from engine.approvals import ClientDecision
from engine.events import StopReason, ToolStatus
from engine.gate import ConfirmReason
from engine.memory.kinds import RewindScope
from sandbox.info import IsolationLevel
from server.protocol.approvals import (
    ProposedEdit,
    SandboxState,
    ToolConfirmParams,
    ToolConfirmResult,
    UserEdit,
)
from server.protocol.base import ClientAnswer, StrictParams, WireModel, optional
from server.protocol.chat import (
    CancelParams,
    CancelResult,
    ChatParams,
    ChatResult,
    ToolCallSummary,
)
from server.protocol.errors import (
    ERROR_CODES,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    REQUEST_CANCELLED,
    BusySessionData,
    ErrorData,
    InvalidParamsData,
    ModelUnavailableData,
    UnwiredGateData,
)
from server.protocol.memory import (
    ChangesParams,
    ChangesResult,
    FileChangeInfo,
    HistoryToolCall,
    HistoryTurn,
    MemoryUnavailableData,
    RewindConflict,
    RewindFile,
    RewindParams,
    RewindResult,
    RewindSkipped,
    SessionDeleteResult,
    SessionInfo,
    SessionLoadResult,
    SessionParams,
    SessionsParams,
    SessionsResult,
)
from server.protocol.model_list import (
    ModelDescription,
    ModelsParams,
    ModelsResult,
    PullCancelledData,
    PullFailedData,
    PullModelParams,
    PullModelResult,
)
from server.protocol.rules import (
    AddRuleParams,
    AddRuleResult,
    ChoiceView,
    DecidedByView,
    RemoveRuleParams,
    RemoveRuleResult,
    RuleRef,
    RulesParams,
    RuleSpec,
    RulesResult,
    RuleView,
)
from server.protocol.status import (
    GatehouseCapabilities,
    SandboxReport,
    SessionSummary,
    StatusParams,
    StatusResult,
)
from server.protocol.stream import (
    AppliedFileEdit,
    ContentEvent,
    ProtectedPath,
    ReasoningEvent,
    StatusEvent,
    StreamEvent,
    StreamHead,
    ToolArgsEvent,
    ToolEndEvent,
    ToolOutputEvent,
    ToolStartEvent,
    stream_event_adapter,
)

AGENT_CHAT = "agent/chat"
AGENT_CANCEL = "agent/cancel"
AGENT_STATUS = "agent/status"
AGENT_STREAM = "agent/stream"
AGENT_MODELS = "agent/models"
AGENT_PULL_MODEL = "agent/pullModel"
AGENT_RULES = "agent/rules"
AGENT_RULES_ADD = "agent/rules/add"
AGENT_RULES_REMOVE = "agent/rules/remove"
AGENT_SESSIONS = "agent/sessions"
AGENT_SESSION_LOAD = "agent/session/load"
AGENT_SESSION_DELETE = "agent/session/delete"
AGENT_CHANGES = "agent/changes"
AGENT_REWIND = "agent/rewind"
TOOL_CONFIRM = "toolConfirm"

Client = Literal["vscode", "chat", "neovim", "emacs"]
"""The clients this repository ships: ``vscode`` (vscode-client/src), ``chat`` (harness/, the
``gatehouse chat`` terminal client), ``neovim`` (editors/neovim, the plug-in), ``emacs``
(editors/emacs, the eglot recipe). The ACP mode (``gatehouse acp``) is another protocol: see
docs/acp.md."""


@dataclass(frozen=True)
class Method:
    """One method or notification of the contract."""

    name: str
    kind: Literal["request", "notification"]
    direction: Literal["client->server", "server->client"]
    params: Any
    """The params model (a pydantic model class or an annotated union); None: no params."""
    result: Any
    """The result model; None for notifications."""
    clients: tuple[Client, ...]
    """The shipped clients that send (client->server) or handle (server->client) it."""
    summary: str


METHODS: tuple[Method, ...] = (
    Method(
        AGENT_CHAT,
        "request",
        "client->server",
        ChatParams,
        ChatResult,
        ("vscode", "chat", "neovim", "emacs"),
        "Run one turn: the model answers, gated tool calls are asked about and run.",
    ),
    Method(
        AGENT_CANCEL,
        "request",
        "client->server",
        CancelParams,
        CancelResult,
        ("vscode", "chat", "neovim", "emacs"),
        "Stop a session's running turn; its agent/chat returns stopReason cancelled.",
    ),
    Method(
        AGENT_STATUS,
        "request",
        "client->server",
        StatusParams,
        StatusResult,
        ("vscode", "neovim"),
        "The server's backend, model, workspace, isolation and sessions.",
    ),
    Method(
        AGENT_MODELS,
        "request",
        "client->server",
        ModelsParams,
        ModelsResult,
        ("vscode",),
        "The models on this machine (Gatehouse's own, Ollama's, LM Studio's, the HF cache).",
    ),
    Method(
        AGENT_PULL_MODEL,
        "request",
        "client->server",
        PullModelParams,
        PullModelResult,
        (),
        "Fetch a model from the Hugging Face Hub (resumable, checksummed, $/progress).",
    ),
    Method(
        AGENT_RULES,
        "request",
        "client->server",
        RulesParams,
        RulesResult,
        ("vscode", "chat"),
        "Every rule in force in this workspace, with where it came from, and what was wrong in "
        "the rules files.",
    ),
    Method(
        AGENT_RULES_ADD,
        "request",
        "client->server",
        AddRuleParams,
        AddRuleResult,
        ("chat",),
        "Add a user rule (this workspace or every one) or a session grant.",
    ),
    Method(
        AGENT_RULES_REMOVE,
        "request",
        "client->server",
        RemoveRuleParams,
        RemoveRuleResult,
        ("vscode", "chat"),
        "Remove a user rule or a session grant by its id.",
    ),
    Method(
        AGENT_SESSIONS,
        "request",
        "client->server",
        SessionsParams,
        SessionsResult,
        ("vscode", "chat"),
        "This workspace's sessions, saved by this server or an earlier one.",
    ),
    Method(
        AGENT_SESSION_LOAD,
        "request",
        "client->server",
        SessionParams,
        SessionLoadResult,
        ("vscode", "chat"),
        "Open a saved session in this server and return its history (grants are not revived).",
    ),
    Method(
        AGENT_SESSION_DELETE,
        "request",
        "client->server",
        SessionParams,
        SessionDeleteResult,
        ("vscode",),
        "Delete a saved session (its audit records stay: the log is append-only).",
    ),
    Method(
        AGENT_CHANGES,
        "request",
        "client->server",
        ChangesParams,
        ChangesResult,
        ("vscode", "chat"),
        "What one turn changed in the workspace, per file with a unified diff, command "
        "effects included.",
    ),
    Method(
        AGENT_REWIND,
        "request",
        "client->server",
        RewindParams,
        RewindResult,
        ("vscode", "chat"),
        "Restore the workspace and/or the conversation to just before a turn; files changed by "
        "hand since are conflicts that need force.",
    ),
    Method(
        AGENT_STREAM,
        "notification",
        "server->client",
        StreamEvent,
        None,
        ("vscode", "chat", "neovim", "emacs"),
        "Everything a running turn does, in order: text deltas, tool calls, output, status.",
    ),
    Method(
        TOOL_CONFIRM,
        "request",
        "server->client",
        ToolConfirmParams,
        ToolConfirmResult,
        ("vscode", "chat", "neovim"),
        "May this tool call run? Nothing runs until the answer allows it; the choices say what "
        "each answer records.",
    ),
)
"""Every Gatehouse method. The standard LSP messages the server also uses (``initialize`` with
:class:`GatehouseCapabilities` under ``capabilities.experimental.gatehouse``,
``window/showMessageRequest`` as the approval fallback, ``window/showMessage``, ``$/progress``,
``$/cancelRequest``) are described in ``docs/protocol.md``."""

__all__ = [
    "AGENT_CANCEL",
    "AGENT_CHANGES",
    "AGENT_CHAT",
    "AGENT_MODELS",
    "AGENT_PULL_MODEL",
    "AGENT_REWIND",
    "AGENT_RULES",
    "AGENT_RULES_ADD",
    "AGENT_RULES_REMOVE",
    "AGENT_SESSIONS",
    "AGENT_SESSION_DELETE",
    "AGENT_SESSION_LOAD",
    "AGENT_STATUS",
    "AGENT_STREAM",
    "ERROR_CODES",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHODS",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "REQUEST_CANCELLED",
    "TOOL_CONFIRM",
    "AddRuleParams",
    "AddRuleResult",
    "AppliedFileEdit",
    "BusySessionData",
    "CancelParams",
    "CancelResult",
    "ChangesParams",
    "ChangesResult",
    "ChatParams",
    "ChatResult",
    "ChoiceView",
    "Client",
    "ClientAnswer",
    "ClientDecision",
    "ConfirmReason",
    "ContentEvent",
    "DecidedByView",
    "ErrorData",
    "FileChangeInfo",
    "GatehouseCapabilities",
    "HistoryToolCall",
    "HistoryTurn",
    "InvalidParamsData",
    "IsolationLevel",
    "MemoryUnavailableData",
    "Method",
    "ModelDescription",
    "ModelUnavailableData",
    "ModelsParams",
    "ModelsResult",
    "ProposedEdit",
    "ProtectedPath",
    "PullCancelledData",
    "PullFailedData",
    "PullModelParams",
    "PullModelResult",
    "ReasoningEvent",
    "RemoveRuleParams",
    "RemoveRuleResult",
    "RewindConflict",
    "RewindFile",
    "RewindParams",
    "RewindResult",
    "RewindScope",
    "RewindSkipped",
    "RuleRef",
    "RuleSpec",
    "RuleView",
    "RulesParams",
    "RulesResult",
    "SandboxReport",
    "SandboxState",
    "SessionDeleteResult",
    "SessionInfo",
    "SessionLoadResult",
    "SessionParams",
    "SessionSummary",
    "SessionsParams",
    "SessionsResult",
    "StatusEvent",
    "StatusParams",
    "StatusResult",
    "StopReason",
    "StreamEvent",
    "StreamHead",
    "StrictParams",
    "ToolArgsEvent",
    "ToolCallSummary",
    "ToolConfirmParams",
    "ToolConfirmResult",
    "ToolEndEvent",
    "ToolOutputEvent",
    "ToolStartEvent",
    "ToolStatus",
    "UnwiredGateData",
    "UserEdit",
    "WireModel",
    "optional",
    "stream_event_adapter",
]
