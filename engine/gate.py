"""The gate policy: which tool calls must be approved by a person before they run.

This module is the single source of truth for the three permission flags. The semantics are the
seed's, exactly::

    needs_confirm = (
        confirm_tool_calls or (confirm_code_execution and name in CODE_EXECUTION_TOOL_NAMES)
    ) and not bypass_permissions
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Literal

CODE_EXECUTION_TOOL_NAMES: frozenset[str] = frozenset({"python", "terminal"})
"""Tools that execute code. Kept here and nowhere else."""

ConfirmReason = Literal["code_execution", "all_tools"]


@dataclass(frozen=True)
class GatePolicy:
    """The three permission flags in force for one request."""

    confirm_tool_calls: bool = False
    confirm_code_execution: bool = True
    bypass_permissions: bool = False

    def needs_confirm(self, name: str) -> bool:
        """True when a call of tool ``name`` must be approved before it runs."""
        return (
            self.confirm_tool_calls
            or (self.confirm_code_execution and name in CODE_EXECUTION_TOOL_NAMES)
        ) and not self.bypass_permissions

    def reason(self, name: str) -> ConfirmReason:
        """Why a call of ``name`` is asked about (only meaningful when :meth:`needs_confirm`)."""
        if self.confirm_code_execution and name in CODE_EXECUTION_TOOL_NAMES:
            return "code_execution"
        return "all_tools"


def unwireable_flag(
    policy: GatePolicy,
    *,
    tools_enabled: bool,
    enabled_tools: Collection[str],
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
    enabled = set(enabled_tools)
    if policy.confirm_tool_calls and enabled:
        return "confirmToolCalls"
    if policy.confirm_code_execution and enabled & CODE_EXECUTION_TOOL_NAMES:
        return "confirmCodeExecution"
    return None
