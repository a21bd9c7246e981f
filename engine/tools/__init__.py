"""The built-in tools, by name.

The names are known without loading the tools (the server advertises them at start-up); the
implementations load on first use (:func:`builtin_tools`, or the ``BUILTIN_TOOLS`` mapping).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache

from engine.tools.base import Tool, ToolContext, ToolError, ToolOutcome

BUILTIN_TOOL_NAMES: tuple[str, ...] = (
    "python",
    "terminal",
    "read_file",
    "list_files",
    "search_files",
    "edit_file",
    "write_file",
    "apply_patch",
)
"""Every built-in tool, in the order a model is shown them."""


@cache
def builtin_tools() -> Mapping[str, Tool]:
    """Every built-in tool by name, loaded on first use."""
    from engine.tools.edits import EDIT_TOOLS  # noqa: PLC0415
    from engine.tools.execution import EXECUTION_TOOLS  # noqa: PLC0415
    from engine.tools.files import FILE_TOOLS  # noqa: PLC0415

    tools = {tool.name: tool for tool in (*EXECUTION_TOOLS, *FILE_TOOLS, *EDIT_TOOLS)}
    if tuple(tools) != BUILTIN_TOOL_NAMES:
        raise RuntimeError(f"BUILTIN_TOOL_NAMES is out of date: the tools are {tuple(tools)}")
    return tools


def __getattr__(name: str) -> Mapping[str, Tool]:
    if name == "BUILTIN_TOOLS":
        return builtin_tools()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "BUILTIN_TOOLS",
    "BUILTIN_TOOL_NAMES",
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolOutcome",
    "builtin_tools",
]
