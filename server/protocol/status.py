"""``agent/status`` and the capabilities in the ``initialize`` result."""

from __future__ import annotations

from pydantic import Field

from sandbox.info import IsolationLevel
from server.protocol.base import StrictParams, WireModel


class SandboxReport(WireModel):
    """The isolation approved code gets on this machine, measured at start-up."""

    level: IsolationLevel = Field(
        description="The strongest tier whose self-test passed: strong, standard, limits-only, "
        "none."
    )
    network: bool = Field(description="Whether approved code can reach the network.")
    min_level: IsolationLevel = Field(description="sandbox.minLevel: code is refused below it.")
    reason: str = Field(description="One sentence a person can read: why this level.")


class GatehouseCapabilities(WireModel):
    """``capabilities.experimental.gatehouse`` in the ``initialize`` result."""

    version: str = Field(description="The server's version.")
    tools: list[str] = Field(description="The built-in tools, in the order a model sees them.")
    sandbox: SandboxReport


class StatusParams(StrictParams):
    """``agent/status`` params: none (``{}`` or omitted)."""


class SessionSummary(WireModel):
    """One session of this server."""

    session_id: str = Field(description="The session's id.")
    turns: int = Field(description="Turns started so far.")
    running: bool = Field(description="Whether a turn is running now.")
    allowed_tools: list[str] = Field(description="Tools approved with allow_session.")


class StatusResult(WireModel):
    """``agent/status`` result."""

    version: str = Field(description="The server's version.")
    backend: str = Field(description="The configured backend.")
    model: str | None = Field(description="The configured or loaded model's name.")
    model_loaded: bool = Field(description="Whether the model is in memory yet.")
    workspace: str = Field(description="The folder tools work in.")
    sandbox: SandboxReport
    sessions: list[SessionSummary]
