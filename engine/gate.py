"""The gate policy: which tool calls must be approved by a person before they run.

This module is the single source of truth for the permission flags. The seed's formula stays
exact for its own flags and gains one term for the edit tools, with "runs code" and "edits files"
properties of the tool (``Tool.runs_code``: ``python`` and ``terminal``; ``Tool.edits_files``:
``edit_file``, ``write_file`` and ``apply_patch``)::

    needs_confirm = (confirm_tool_calls
                     or (confirm_code_execution and tool.runs_code)
                     or (confirm_file_edits and tool.edits_files))
                    and not bypass_permissions

One rule sits beside it, in the loop: an edit of an auto-run path (``.git``, hooks,
``.vscode``, ...) is always asked about unless ``bypass_permissions`` (see
:mod:`engine.tools.protected`).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:  # the protocol imports ConfirmReason from here: keep this module light
    from engine.tools.base import Tool

ConfirmReason = Literal["code_execution", "file_edit", "all_tools", "ask_rule", "protected_path"]
"""Why a call is asked about (the wire's ``reason``): a confirm flag covers it
(``code_execution``, ``file_edit``, ``all_tools``), an ask rule matched it (``ask_rule``, see
:mod:`engine.rules.policy`), or it is an edit of an auto-run path (``protected_path``), asked
whatever the flags, the rules and "allow for session" say."""

GateFlag = Literal["confirmToolCalls", "confirmCodeExecution", "confirmFileEdits"]


@dataclass(frozen=True)
class GatePolicy:
    """The permission flags in force for one request."""

    confirm_tool_calls: bool = False
    confirm_code_execution: bool = True
    bypass_permissions: bool = False
    confirm_file_edits: bool = True

    def needs_confirm(self, tool: Tool) -> bool:
        """True when a call of ``tool`` must be approved before it runs."""
        return (
            self.confirm_tool_calls
            or (self.confirm_code_execution and tool.runs_code)
            or (self.confirm_file_edits and tool.edits_files)
        ) and not self.bypass_permissions

    def reason(self, tool: Tool) -> ConfirmReason:
        """Why a call of ``tool`` is asked about (only meaningful when :meth:`needs_confirm`)."""
        if self.confirm_code_execution and tool.runs_code:
            return "code_execution"
        if self.confirm_file_edits and tool.edits_files:
            return "file_edit"
        return "all_tools"


def unwireable_flag(
    policy: GatePolicy,
    *,
    tools_enabled: bool,
    enabled_tools: Collection[Tool],
    max_tool_calls: int,
) -> GateFlag | None:
    """The flag that would need a prompt the client cannot show, or ``None``.

    Used to refuse a request up front, before any model is loaded or run, when the client can
    answer neither ``toolConfirm`` nor ``window/showMessageRequest``. Only requests that could
    really prompt are refused: not under bypass, not with tools disabled or ``max_tool_calls == 0``,
    for ``confirmCodeExecution`` not when no code-execution tool is enabled, and for
    ``confirmFileEdits`` not when no edit tool is enabled.
    """
    if policy.bypass_permissions or not tools_enabled or max_tool_calls <= 0:
        return None
    if policy.confirm_tool_calls and enabled_tools:
        return "confirmToolCalls"
    if policy.confirm_code_execution and any(tool.runs_code for tool in enabled_tools):
        return "confirmCodeExecution"
    if policy.confirm_file_edits and any(tool.edits_files for tool in enabled_tools):
        return "confirmFileEdits"
    return None
