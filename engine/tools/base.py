"""What every built-in tool is: a name, a description, a pydantic argument model and ``run``.

A tool failure is a :class:`ToolError`: the loop turns it into a tool result the model sees
(status ``failed``), never a crash.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

if TYPE_CHECKING:  # the runner and the workspace guard load on the first command
    from sandbox.binding import Binding
    from sandbox.box import Box
from sandbox.info import ProtectedChange, SandboxInfo


class ToolError(Exception):
    """A failure the model sees as the tool's result (status ``failed``)."""


class ToolArgs(BaseModel):
    """Base of every tool's argument model: unknown arguments are an error the model sees."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


def canonical_arguments(args: ToolArgs) -> dict[str, Any]:
    """The arguments as they will be used, in the form approvals are bound to: the fields the
    call gave (defaults left out), as JSON values. Equal to the raw arguments for every valid
    call that nothing had to coerce."""
    return args.model_dump(mode="json", exclude_unset=True)


@dataclass(frozen=True)
class ToolContext:
    """What a tool may use while it runs."""

    workspace: Path
    timeout_seconds: float
    on_output: Callable[[str], None] = field(default=lambda _text: None)
    box: Box | None = None
    """Where approved code runs (bound per session; None: the workspace, no sandbox)."""
    digest: str | None = None
    """The SHA-256 the decision to run this call recorded (:mod:`sandbox.binding`): a tool that
    starts a process hands it to the box with the arguments it really runs (:meth:`Tool.binding`),
    and the executor refuses a mismatch. None: no gate decided (direct use in tests)."""

    def binding(self, tool: Tool, args: ToolArgs) -> Binding | None:
        """What the executor checks before it starts the process for ``args``."""
        if self.digest is None:
            return None
        from sandbox.binding import Binding  # noqa: PLC0415

        return Binding(tool.name, canonical_arguments(args), self.digest)

    @property
    def code_box(self) -> Box:
        if self.box is not None:
            return self.box
        from sandbox.box import Box  # noqa: PLC0415

        return Box(self.workspace)


@dataclass(frozen=True)
class ToolOutcome:
    """What a finished tool produced. ``text`` is exactly what the model receives."""

    text: str
    exit_code: int | None = None
    failed: bool = False
    sandbox: SandboxInfo | None = None
    protected: tuple[ProtectedChange, ...] = ()
    """Auto-run paths the call created or changed and what was done about each."""


ToolKind = Literal["execute", "read", "search"]
"""What a tool does: ``execute`` runs code (in the sandbox, asked about under
``confirmCodeExecution``); ``read`` and ``search`` only look at the workspace."""


class Tool(ABC):
    """A built-in tool."""

    name: ClassVar[str]
    description: ClassVar[str]
    args_model: ClassVar[type[ToolArgs]]
    kind: ClassVar[ToolKind]

    @property
    def runs_code(self) -> bool:
        """True for tools that execute code: they run in the sandbox and are refused below
        ``sandbox.minLevel``."""
        return self.kind == "execute"

    @classmethod
    def parameters_schema(cls) -> dict[str, Any]:
        """The JSON schema of the arguments (what a model is shown)."""
        return cls.args_model.model_json_schema()

    def parse_arguments(self, arguments: dict[str, Any]) -> ToolArgs:
        """Validate raw arguments; raise :class:`ToolError` naming each bad field."""
        try:
            return self.args_model.model_validate(arguments)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or 'arguments'}: {err['msg']}"
                for err in exc.errors()
            )
            raise ToolError(f"Invalid arguments for {self.name}: {problems}") from None

    @abstractmethod
    async def run(self, args: Any, ctx: ToolContext) -> ToolOutcome:
        """Run the tool with validated ``args`` (an instance of ``args_model``)."""
