"""The code-execution tools ``python`` and ``terminal``; both run only through ``sandbox.runner``.

The gate decides whether they may run (see :mod:`engine.gate`); by the time ``run`` is called the
call has been approved, or needed no approval.
"""

from __future__ import annotations

import shutil
import sys
from typing import TYPE_CHECKING, Any

from pydantic import Field

from engine.tools.base import Tool, ToolArgs, ToolContext, ToolOutcome

if TYPE_CHECKING:
    from sandbox.runner import ExecResult


class PythonArgs(ToolArgs):
    code: str = Field(min_length=1, description="The Python source code to run.")


class TerminalArgs(ToolArgs):
    command: str = Field(min_length=1, description="The shell command line to run.")


def _shell() -> str:
    return shutil.which("bash") or "/bin/sh"


def _outcome(result: ExecResult) -> ToolOutcome:
    text = result.output if result.output else "(no output)"
    if result.exit_code not in (0, None) and not (result.timed_out or result.output_limit_exceeded):
        text = f"{text.rstrip()}\n[exit code {result.exit_code}]"
    failed = result.timed_out or result.output_limit_exceeded or result.exit_code is None
    return ToolOutcome(
        text=text,
        exit_code=result.exit_code,
        failed=failed,
        sandbox=result.sandbox,
        protected=result.protected,
    )


class PythonTool(Tool):
    name = "python"
    kind = "execute"
    description = "Run Python code in the workspace folder and return what it prints."
    args_model = PythonArgs

    async def run(self, args: Any, ctx: ToolContext) -> ToolOutcome:
        assert isinstance(args, PythonArgs)
        result = await ctx.code_box.run(
            (sys.executable, "-u", "-"),
            timeout_seconds=ctx.timeout_seconds,
            on_output=ctx.on_output,
            stdin=args.code.encode("utf-8"),
            binding=ctx.binding(self, args),
        )
        return _outcome(result)


class TerminalTool(Tool):
    name = "terminal"
    kind = "execute"
    description = "Run a shell command in the workspace folder and return its output."
    args_model = TerminalArgs

    async def run(self, args: Any, ctx: ToolContext) -> ToolOutcome:
        assert isinstance(args, TerminalArgs)
        result = await ctx.code_box.run(
            (_shell(), "-c", args.command),
            timeout_seconds=ctx.timeout_seconds,
            on_output=ctx.on_output,
            binding=ctx.binding(self, args),
        )
        return _outcome(result)


EXECUTION_TOOLS: tuple[Tool, ...] = (PythonTool(), TerminalTool())
