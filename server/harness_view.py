"""How ``gatehouse chat`` shows a turn to a person: streamed text, tool calls, approvals, results.

Everything here writes to text streams; nothing here talks to the server. In ``--json`` mode the
transcript is switched off (``out=None``) and only approval interactions reach ``ask_out``.
"""

from __future__ import annotations

import json
import os
from typing import Any, TextIO

from engine.gate import CODE_EXECUTION_TOOL_NAMES
from engine.loop import DENIED_TEXT

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

    def style(self, text: str, style: str) -> str:
        if not style or not self.color or not text:
            return text
        return "".join(_STYLES[s] for s in style.split()) + text + _RESET

    def write(self, text: str, *, style: str = "", prefix: str = "") -> None:
        """Write ``text``; ``prefix`` starts every line it begins."""
        if not text:
            return
        parts: list[str] = []
        for line in text.splitlines(keepends=True):
            if self.at_line_start and prefix:
                parts.append(self.style(prefix, "dim"))
            ends = line.endswith("\n")
            parts.append(self.style(line.rstrip("\n"), style) + ("\n" if ends else ""))
            self.at_line_start = ends
        self.stream.write("".join(parts))
        self.stream.flush()

    def line(self, text: str, *, style: str = "", prefix: str = "") -> None:
        """A whole line (or lines) of its own."""
        self.end_line()
        self.write(text + "\n", style=style, prefix=prefix)

    def end_line(self) -> None:
        if not self.at_line_start:
            self.write("\n")


def sandbox_text(sandbox: Any) -> str:
    if not isinstance(sandbox, dict):
        return "isolation: unknown"
    network = "on" if sandbox.get("network") else "off"
    return f"isolation: {sandbox.get('level', 'unknown')} · network: {network}"


def _argument_lines(name: str, arguments: dict[str, Any]) -> list[tuple[str, str]]:
    """(prefix, text) lines that show a call's arguments readably."""
    if name == "terminal" and isinstance(arguments.get("command"), str):
        lines = arguments["command"].splitlines() or [""]
        rest = {k: v for k, v in arguments.items() if k != "command"}
        out = [("  $ " if i == 0 else "    ", line) for i, line in enumerate(lines)]
    elif name == "python" and isinstance(arguments.get("code"), str):
        lines = arguments["code"].splitlines() or [""]
        rest = {k: v for k, v in arguments.items() if k != "code"}
        out = [("  │ ", line) for line in lines]
    else:
        rest, out = arguments, []
    for key, value in rest.items():
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        for i, line in enumerate(text.splitlines() or [""]):
            out.append((f"  {key}: " if i == 0 else "    ", line))
    return out


def _first_line(text: Any, limit: int = 200) -> str:
    line = str(text or "").strip().splitlines()[0:1]
    return (line[0][:limit] + ("…" if len(line[0]) > limit else "")) if line else ""


class View:
    def __init__(self, out: TextIO | None, ask_out: TextIO) -> None:
        main = Writer(out) if out is not None else None
        self.out = main
        self.ask: Writer = main if main is not None and out is ask_out else Writer(ask_out)
        self.sandbox: Any = None  # from the initialize result, for calls that are not confirmed
        self._mode = ""
        self._open_tools: dict[str, str] = {}

    # --- the transcript --------------------------------------------------------------------

    def stream(self, params: dict[str, Any]) -> None:
        """One ``agent/stream`` notification."""
        out = self.out
        if out is None:
            return
        kind = params.get("type")
        text = str(params.get("text", ""))
        if kind == "content":
            self._switch(out, "content")
            out.write(text)
        elif kind == "reasoning":
            self._switch(out, "reasoning")
            out.write(text, style="dim", prefix="┊ ")
        elif kind == "tool_start":
            self._tool_start(out, params)
        elif kind == "tool_output":
            self._switch(out, "tool_output")
            out.write(text, prefix="  ")
        elif kind == "tool_end":
            self._tool_end(out, params)
        elif kind == "status" and not self._open_tools:
            # Inside a tool call the status notes repeat what the call's own lines say.
            self._mode = ""
            out.line(f"· {text}", style="dim")

    def _switch(self, out: Writer, mode: str) -> None:
        if mode != self._mode:
            out.end_line()
            self._mode = mode

    def _tool_start(self, out: Writer, params: dict[str, Any]) -> None:
        name = str(params.get("name", "?"))
        arguments = params.get("arguments")
        self._open_tools[str(params.get("toolCallId"))] = name
        self._mode = "tool"
        out.line(f"▶ {name}", style="bold")
        if isinstance(arguments, dict):
            for prefix, line in _argument_lines(name, arguments):
                out.line(line, prefix=prefix)
        if name in CODE_EXECUTION_TOOL_NAMES and not params.get("awaitingConfirmation"):
            out.line(f"  {sandbox_text(self.sandbox)}", style="dim")

    def _tool_end(self, out: Writer, params: dict[str, Any]) -> None:
        name = self._open_tools.pop(str(params.get("toolCallId")), str(params.get("name", "?")))
        status, code, result = params.get("status"), params.get("exitCode"), params.get("result")
        self._mode = "tool"
        if status == "completed" and code in (None, 0):
            out.line(f"✓ {name} " + ("done" if code is None else "exited 0"), style="green")
            return
        if status in ("completed", "failed") and code is not None:
            line = f"✗ {name} exited {code}"
        elif status == "denied":
            line = f"✗ {name} denied"
            if result and not str(result).startswith(DENIED_TEXT):
                line += f": {_first_line(result)}"
        else:
            label = {"timed_out": "timed out", "cancelled": "cancelled"}.get(str(status), "failed")
            detail = _first_line(result)
            line = f"✗ {name} {label}" + (f": {detail}" if detail else "")
        out.line(line, style="red")

    def banner(self, info: dict[str, Any], workspace: str) -> None:
        if self.out is not None:
            version = info.get("version", "?")
            where = f"{workspace} · {sandbox_text(self.sandbox)}"
            self.out.line(f"gatehouse {version} · {where}", style="dim")
            self.out.line("/new starts a new session, /quit (or Ctrl-D) exits", style="dim")

    def end_turn(self, result: dict[str, Any]) -> None:
        self._mode = ""
        self._open_tools.clear()
        if self.out is None:
            return
        self.out.end_line()
        stop = result.get("stopReason")
        notes = {
            "cancelled": "(cancelled)",
            "max_tokens": "(stopped: the model reached its token limit)",
            "tool_limit": "(stopped: the tool call limit was reached)",
        }
        if stop in notes:
            self.out.line(notes[str(stop)], style="yellow")

    # --- approvals (shown even in --json mode, on stderr) ----------------------------------

    def confirm(self, params: dict[str, Any]) -> None:
        """The approval request's facts; the call itself was shown by its tool_start."""
        if self.out is None:
            # --json: there is no transcript, so say what is being asked.
            self.ask.line(f"▶ {params.get('name', '?')}", style="bold")
            arguments = params.get("arguments")
            if isinstance(arguments, dict):
                for prefix, line in _argument_lines(str(params.get("name")), arguments):
                    self.ask.line(line, prefix=prefix)
        self.ask.line(f"  {sandbox_text(params.get('sandbox'))}", style="dim")

    def note(self, text: str, style: str = "") -> None:
        self.ask.line(f"  {text}", style=style)

    def prompt(self, text: str) -> None:
        self.ask.end_line()
        self.ask.write(text, style="bold")

    def answered(self) -> None:
        """The person pressed Enter: the terminal echoed the newline."""
        self.ask.at_line_start = True
