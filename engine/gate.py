"""The gate policy: which tool calls must be approved by a person before they run.

This module is the single source of truth for the three permission flags. The semantics are the
seed's, exactly, with "runs code" a property of the tool (``Tool.runs_code``: ``python`` and
``terminal``)::

    needs_confirm = (confirm_tool_calls or (confirm_code_execution and tool.runs_code))
                    and not bypass_permissions
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:  # the protocol imports ConfirmReason from here: keep this module light
    from engine.tools.base import Tool

ConfirmReason = Literal["code_execution", "all_tools", "ask_rule"]
"""Why a call is asked about (the wire's ``reason``): a confirm flag covers it
(``code_execution``, ``all_tools``), or an ask rule matched it (``ask_rule``, see
:mod:`engine.rules.policy`)."""


@dataclass(frozen=True)
class GatePolicy:
    """The three permission flags in force for one request."""

    confirm_tool_calls: bool = False
    confirm_code_execution: bool = True
    bypass_permissions: bool = False

    def needs_confirm(self, tool: Tool) -> bool:
        """True when a call of ``tool`` must be approved before it runs."""
        return (
            self.confirm_tool_calls or (self.confirm_code_execution and tool.runs_code)
        ) and not self.bypass_permissions

    def reason(self, tool: Tool) -> ConfirmReason:
        """Why a call of ``tool`` is asked about (only meaningful when :meth:`needs_confirm`)."""
        if self.confirm_code_execution and tool.runs_code:
            return "code_execution"
        return "all_tools"


def unwireable_flag(
    policy: GatePolicy,
    *,
    tools_enabled: bool,
    enabled_tools: Collection[Tool],
    max_tool_calls: int,
) -> Literal["confirmToolCalls", "confirmCodeExecution"] | None:
    """The flag that would need a prompt the client cannot show, or ``None``.

    Used to refuse a request up front, before any model is loaded or run, when the client can
    answer neither ``toolConfirm`` nor ``window/showMessageRequest``. Only requests that could
    really prompt are refused: not under bypass, not with tools disabled or ``max_tool_calls == 0``,
    and for ``confirmCodeExecution`` not when no code-execution tool is enabled.
    """
    if policy.bypass_permissions or not tools_enabled or max_tool_calls <= 0:
        return None
    if policy.confirm_tool_calls and enabled_tools:
        return "confirmToolCalls"
    if policy.confirm_code_execution and any(tool.runs_code for tool in enabled_tools):
        return "confirmCodeExecution"
    return None
