"""A session's box: where its approved code runs, bound once when the session starts.

The workspace, the machine's :class:`~sandbox.tiers.Sandbox` and the session's private tmp folder
do not change between calls, so they are bound here instead of being threaded through every
request. A request under ``bypassPermissions`` uses :meth:`Box.unconfined`: the same box with the
sandbox switched off (the environment is still scrubbed; the timeout and caps still apply).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from sandbox.binding import Binding
from sandbox.policy import SandboxSettings
from sandbox.runner import ExecRequest, ExecResult, execute
from sandbox.tiers import Sandbox, unsandboxed


def no_sandbox() -> Sandbox:
    """No isolation and no minimum: only a scrubbed environment, timeout and caps (tests and
    embedders that confine code themselves). The server always binds the probed sandbox."""
    return Sandbox(unsandboxed().info, SandboxSettings(min_level="none"))


@dataclass(frozen=True)
class Box:
    workspace: Path
    """The folder code runs in, and the only one it may write (besides its tmp)."""
    sandbox: Sandbox = field(default_factory=no_sandbox)
    """The isolation this machine offers, as probed at start-up."""
    scratch_dir: Path | None = None
    """The session's private temporary folder (``/tmp`` inside the strong tier)."""
    bypass: bool = False
    """Run without the sandbox (``bypassPermissions``)."""

    def unconfined(self) -> Box:
        """This box with the sandbox off, for a request under ``bypassPermissions``."""
        return replace(self, bypass=True)

    def refusal(self) -> str | None:
        """Why code may not run here (the machine is below ``sandbox.minLevel``), or None.
        Under bypass nothing is refused: running outside the box was chosen explicitly."""
        return None if self.bypass else self.sandbox.refusal(self.workspace)

    async def run(
        self,
        argv: tuple[str, ...],
        *,
        timeout_seconds: float,
        on_output: Callable[[str], None],
        stdin: bytes | None = None,
        binding: Binding | None = None,
    ) -> ExecResult:
        """Run an approved command with the workspace as its working folder; ``binding`` (what
        the approval approved) is checked right before the process starts."""
        request = ExecRequest(
            argv=argv,
            cwd=self.workspace,
            timeout_seconds=timeout_seconds,
            stdin=stdin,
            bypass=self.bypass,
            scratch_dir=self.scratch_dir,
            binding=binding,
        )
        return await execute(request, on_output, sandbox=self.sandbox)
