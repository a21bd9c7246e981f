"""The built-in tools, by name."""

from __future__ import annotations

from collections.abc import Mapping

from engine.tools.base import Tool, ToolContext, ToolError, ToolOutcome
from engine.tools.execution import EXECUTION_TOOLS
from engine.tools.files import FILE_TOOLS

BUILTIN_TOOLS: Mapping[str, Tool] = {tool.name: tool for tool in (*EXECUTION_TOOLS, *FILE_TOOLS)}
"""Every built-in tool, in the order a model is shown them."""

BUILTIN_TOOL_NAMES: tuple[str, ...] = tuple(BUILTIN_TOOLS)

__all__ = ["BUILTIN_TOOLS", "BUILTIN_TOOL_NAMES", "Tool", "ToolContext", "ToolError", "ToolOutcome"]
