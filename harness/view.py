"""How ``gatehouse chat`` shows a turn to a person: streamed text, tool calls, approvals, results.

Everything here writes to text streams; nothing here talks to the server. Every piece of text that
came from the model or from a command goes through :func:`server.protocol.display.visible` (in
:meth:`Writer.write`), so terminal escapes, bidi controls and zero-width characters are shown as
escapes and can never rewrite what the person sees. In ``--json`` mode the transcript is switched
off (``out=None``) and only approval interactions reach ``ask_out``.
"""

from __future__ import annotations

import json
import os
from typing import Any, TextIO

from server.protocol import (
    AppliedFileEdit,
    ChatResult,
    ContentEvent,
    ProposedEdit,
    ReasoningEvent,
    SandboxReport,
    SandboxState,
    StatusEvent,
    StreamEvent,
    ToolConfirmParams,
    ToolEndEvent,
    ToolOutputEvent,
    ToolStartEvent,
)
from server.protocol.display import hidden_warning, visible

EDIT_TOOLS = ("edit_file", "write_file", "apply_patch")

_STYLES = {
    "dim": "\x1b[2m",
    "bold": "\x1b[1m",
    "green": "\x1b[32m",
    "red": "\x1b[31m",
    "yellow": "\x1b[33m",
}
_RESET = "\x1b[0m"


def _wants_color(stream: TextIO) -> bool:
    try:
        return stream.isatty() and "NO_COLOR" not in os.environ
    except (AttributeError, ValueError):
        return False


class Writer:
    """One output stream that knows whether its cursor is at the start of a line."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.color = _wants_color(stream)
        self.at_line_start = True
        self._held_cr = False  # a "\r" at the end of a delta may be the first half of "\r\n"

    def style(self, text: str, style: str) -> str:
        if not style or not self.color or not text:
            return text
        return "".join(_STYLES[s] for s in style.split()) + text + _RESET

    def write(self, text: str, *, style: str = "", prefix: str = "") -> None:
        """Write ``text`` as a person may see it (see the module docs); ``prefix`` starts every
        line it begins."""
        if self._held_cr:
            text, self._held_cr = "\r" + text, False
        if text.endswith("\r"):
            text, self._held_cr = text[:-1], True
        if text:
            self._emit(visible(text), style, prefix)

    def _emit(self, shown: str, style: str, prefix: str) -> None:
        out: list[str] = []
        for index, line in enumerate(shown.split("\n")):
            if index:
                out.append("\n")
                self.at_line_start = True
            if line:
                if self.at_line_start and prefix:
                    out.append(self.style(prefix, "dim"))
                out.append(self.style(line, style))
                self.at_line_start = False
        self.stream.write("".join(out))
        self.stream.flush()

    def line(self, text: str, *, style: str = "", prefix: str = "") -> None:
        """A whole line (or lines) of its own."""
        self.end_line()
        self.write(text + "\n", style=style, prefix=prefix)

    def end_line(self) -> None:
        if self._held_cr:  # the text ended with a lone "\r": show it
            self._held_cr = False
            self._emit(visible("\r"), "", "")
        if not self.at_line_start:
            self._emit("\n", "", "")


def sandbox_text(sandbox: SandboxState | SandboxReport | None) -> str:
    if sandbox is None:
        return "isolation: unknown"
    network = "on" if sandbox.network else "off"
    return f"isolation: {sandbox.level} · network: {network}"


def _diff_style(line: str) -> str:
    if line.startswith(("+++ ", "--- ")):
        return "bold"
    if line.startswith("+"):
        return "green"
    if line.startswith("-"):
        return "red"
    if line.startswith("@@"):
        return "yellow"
    return "dim" if line.startswith("\\") else ""


def _counts(diff: str) -> tuple[int, int]:
    body = [line for line in diff.split("\n") if not line.startswith(("+++ ", "--- "))]
    return sum(1 for x in body if x.startswith("+")), sum(1 for x in body if x.startswith("-"))


def _argument_lines(name: str, arguments: dict[str, Any]) -> list[tuple[str, str]]:
    """(prefix, text) lines that show a call's arguments readably."""
    if name in EDIT_TOOLS:
        # What an edit changes is shown as its diff (in the approval prompt, or when it ends).
        if isinstance(arguments.get("path"), str):
            return [("  path: ", arguments["path"])]
        patch = arguments.get("patch")
        count = len(patch.split("\n")) if isinstance(patch, str) else 0
        return [("  ", f"(a patch of {count} lines; its diff follows)")]
    if name == "terminal" and isinstance(arguments.get("command"), str):
        lines = arguments["command"].split("\n")
        rest = {k: v for k, v in arguments.items() if k != "command"}
        out = [("  $ " if i == 0 else "    ", line) for i, line in enumerate(lines)]
    elif name == "python" and isinstance(arguments.get("code"), str):
        lines = arguments["code"].split("\n")
        rest = {k: v for k, v in arguments.items() if k != "code"}
        out = [("  │ ", line) for line in lines]
    else:
        rest, out = arguments, []
    for key, value in rest.items():
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        for i, line in enumerate(text.split("\n")):
            out.append((f"  {key}: " if i == 0 else "    ", line))
    return out


def diff_lines(out: Writer, diff: str) -> None:
    """A unified diff, line by line, coloured by kind (through the display rule)."""
    for line in diff.rstrip("\n").split("\n"):
        out.line(line, style=_diff_style(line), prefix="  ")


def _all_text(arguments: dict[str, Any]) -> str:
    return json.dumps(arguments, ensure_ascii=False) + "".join(
        v for v in arguments.values() if isinstance(v, str)
    )


def _first_line(text: str, limit: int = 200) -> str:
    lines = text.strip().split("\n")
    line = lines[0] if lines else ""
    return line[:limit] + ("…" if len(line) > limit else "")


class View:
    def __init__(self, out: TextIO | None, ask_out: TextIO) -> None:
        main = Writer(out) if out is not None else None
        self.out = main
        self.ask: Writer = main if main is not None and out is ask_out else Writer(ask_out)
        self.sandbox: SandboxReport | None = None  # from the initialize result
        self._mode = ""
        self._open_tools: dict[str, str] = {}
        self.denied_here: set[str] = set()
        """Calls the person at this terminal denied: their tool_end needs no explanation."""
        self._diffs_shown: set[str] = set()
        """Edit calls whose diff the approval prompt showed."""

    # --- the transcript --------------------------------------------------------------------

    def stream(self, event: StreamEvent) -> None:
        """One ``agent/stream`` notification."""
        out = self.out
        if out is None:
            return
        if isinstance(event, ContentEvent):
            self._switch(out, "content")
            out.write(event.text)
        elif isinstance(event, ReasoningEvent):
            self._switch(out, "reasoning")
            out.write(event.text, style="dim", prefix="┊ ")
        elif isinstance(event, ToolStartEvent):
            self._tool_start(out, event)
        elif isinstance(event, ToolOutputEvent):
            self._switch(out, "tool_output")
            out.write(event.text, prefix="  ")
        elif isinstance(event, ToolEndEvent):
            self._tool_end(out, event)
        elif isinstance(event, StatusEvent) and not self._open_tools:
            # Inside a tool call the status notes repeat what the call's own lines say.
            self._mode = ""
            out.line(f"· {event.text}", style="dim")

    def _switch(self, out: Writer, mode: str) -> None:
        if mode != self._mode:
            out.end_line()
            self._mode = mode

    def _tool_start(self, out: Writer, event: ToolStartEvent) -> None:
        self._open_tools[event.tool_call_id] = event.name
        self._mode = "tool"
        out.line(f"▶ {event.name}", style="bold")
        for prefix, line in _argument_lines(event.name, event.arguments):
            out.line(line, prefix=prefix)

    def _tool_end(self, out: Writer, event: ToolEndEvent) -> None:
        self._tool_end_line(out, event)
        for change in event.protected or []:
            # An auto-run path (.git, hooks, .vscode, ...) the call touched: say what was done.
            out.line(f"  ! {change.path}: {change.action} ({change.detail})", style="yellow")
        shown = event.tool_call_id in self._diffs_shown
        self._diffs_shown.discard(event.tool_call_id)
        for edit in event.edits or []:
            self._applied(out, edit, full=not shown or edit.user_edited)

    def _applied(self, out: Writer, edit: AppliedFileEdit, *, full: bool) -> None:
        added, removed = _counts(edit.diff)
        mine = ", your version" if edit.user_edited else ""
        out.line(f"  ✎ {edit.path}: {edit.action} (+{added} -{removed}{mine})", style="green")
        if full:
            diff_lines(out, edit.diff)

    def _tool_end_line(self, out: Writer, event: ToolEndEvent) -> None:
        name = self._open_tools.pop(event.tool_call_id, event.name)
        status, code = event.status, event.exit_code
        self._mode = "tool"
        where = f" ({sandbox_text(event.sandbox)})" if event.sandbox is not None else ""
        if status == "completed" and code in (None, 0):
            done = "done" if code is None else "exited 0"
            out.line(f"✓ {name} {done}{where}", style="green")
            return
        if status in ("completed", "failed") and code is not None:
            line = f"✗ {name} exited {code}{where}"
        elif status == "denied":
            line = f"✗ {name} denied"
            if event.tool_call_id not in self.denied_here:
                line += f": {_first_line(event.result)}"  # why, when it was not denied here
        else:
            label = {"timed_out": "timed out", "cancelled": "cancelled"}.get(status, "failed")
            detail = _first_line(event.result)
            line = f"✗ {name} {label}" + (f": {detail}" if detail else "")
        out.line(line, style="red")

    def banner(self, version: str, workspace: str) -> None:
        if self.out is not None:
            where = f"{workspace} · {sandbox_text(self.sandbox)}"
            self.out.line(f"gatehouse {version} · {where}", style="dim")
            self.out.line(
                "/new starts a new session, /sessions and /resume N reopen saved ones, /changes "
                "and /rewind show and undo a turn, /rules lists the rules, /quit (or Ctrl-D) exits",
                style="dim",
            )

    def end_turn(self, result: ChatResult | None) -> None:
        self._mode = ""
        self._open_tools.clear()
        if self.out is None:
            return
        self.out.end_line()
        notes = {
            "cancelled": "(cancelled)",
            "max_tokens": "(stopped: the model reached its token limit)",
            "tool_limit": "(stopped: the tool call limit was reached)",
            "error": "(stopped: the model failed; see the status above)",
        }
        if result is not None and result.stop_reason in notes:
            self.out.line(notes[result.stop_reason], style="yellow")

    # --- approvals (shown even in --json mode, on stderr) ----------------------------------

    def confirm(self, params: ToolConfirmParams) -> None:
        """The approval request's facts; the call itself was shown by its tool_start."""
        if self.out is None:
            # --json: there is no transcript, so say what is being asked.
            self.ask.line(f"▶ {params.name}", style="bold")
            for prefix, line in _argument_lines(params.name, params.arguments):
                self.ask.line(line, prefix=prefix)
        if params.edits:
            self._diffs_shown.add(params.tool_call_id)
            self._proposed(params.edits)
            return
        self.ask.line(f"  {sandbox_text(params.sandbox)}", style="dim")
        warning = hidden_warning(_all_text(params.arguments))
        if warning:
            self.ask.line(f"  {warning}", style="yellow bold")
        if params.unclear:
            why = "; it ".join(params.unclear)
            self.ask.line(f"  Rules cannot allow this command: it {why}.", style="dim")

    def _proposed(self, edits: list[ProposedEdit]) -> None:
        """Every file of an edit, as a coloured unified diff (shown in full)."""
        for edit in edits:
            added, removed = _counts(edit.diff)
            self.ask.line(f"  ✎ {edit.path}: {edit.action} (+{added} -{removed})", style="bold")
            if edit.protected is not None:
                self.ask.line(
                    f"  ! protected: {edit.protected} (asked even after [s]ession)",
                    style="yellow bold",
                )
            diff_lines(self.ask, edit.diff)
        warning = hidden_warning("".join(edit.diff for edit in edits))
        if warning:
            self.ask.line(f"  {warning}", style="yellow bold")

    def note(self, text: str, style: str = "") -> None:
        self.ask.line(f"  {text}", style=style)

    def prompt(self, text: str) -> None:
        self.ask.end_line()
        self.ask.write(text, style="bold")

    def answered(self) -> None:
        """The person pressed Enter: the terminal echoed the newline."""
        self.ask.at_line_start = True
