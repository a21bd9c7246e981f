"""The literals of rules, declared once (the wire protocol imports them from here)."""

from __future__ import annotations

from typing import Literal

RuleAction = Literal["allow", "ask", "deny"]
RuleSource = Literal["builtin", "user", "workspace", "session"]
ChoiceKind = Literal["allow_once", "allow_session", "allow_always", "deny"]
"""A prompt's answers: run this call once; grant the proposed rule for the session; write it
as a user rule for this workspace; do not run it."""
DeciderKind = Literal["rule", "person", "settings", "failure"]
"""``rule``: a rule decided (no prompt); ``person``: an answer to a prompt; ``settings``: no
prompt was needed (the confirm flags do not cover the call, or ``bypassPermissions``);
``failure``: no valid answer came (timeout, cancel, a malformed or failed answer)."""

ACTIONS: tuple[RuleAction, ...] = ("allow", "ask", "deny")
SOURCES: tuple[RuleSource, ...] = ("builtin", "user", "workspace", "session")
"""The sources, in the documented order they are listed in (precedence is by action, not by
source: deny > ask > allow, whatever the source)."""
