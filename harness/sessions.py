"""``gatehouse chat``'s memory: ``--resume``/``--continue``, and ``/sessions``, ``/resume``,
``/changes`` and ``/rewind`` in the REPL.

Everything goes through the wire (``agent/sessions``, ``agent/session/load``,
``agent/changes``, ``agent/rewind``) and every text shown goes through the display rule
(:meth:`harness.view.Writer.write`).
"""

from __future__ import annotations

import argparse
from typing import Any, Protocol

from pydantic import ValidationError

from harness.connection import ErrorResponse, RpcClient
from harness.terminal import LineReader
from harness.view import View
from server.protocol import (
    AGENT_CHANGES,
    AGENT_REWIND,
    AGENT_SESSION_LOAD,
    AGENT_SESSIONS,
    ChangesResult,
    RewindResult,
    SessionInfo,
    SessionLoadResult,
    SessionsResult,
)


class Chat(Protocol):
    """What these commands use of :class:`harness.chat.Chat`."""

    args: argparse.Namespace
    client: RpcClient
    view: View
    lines: LineReader
    session_id: str | None

    def emit_json(self, record: dict[str, Any]) -> None: ...


HISTORY_SHOWN = 5
"""Turns of a resumed session shown before the prompt."""
SCOPES = ("files", "conversation", "both")


def _first_line(text: str, limit: int = 100) -> str:
    line = next((part for part in text.strip().splitlines() if part.strip()), "")
    return line if len(line) <= limit else line[: limit - 1] + "…"


class SessionCommands:
    """The memory commands of one chat."""

    def __init__(self, chat: Chat) -> None:
        self.chat = chat
        self.listed: list[SessionInfo] = []
        self.turn_ids: list[str] = []
        """The turns of the current session, oldest first."""

    def note(self, text: str, style: str = "") -> None:
        self.chat.view.note(text, style)

    async def _request(self, method: str, params: dict[str, Any]) -> Any:
        try:
            return await self.chat.client.request(method, params)
        except ErrorResponse as exc:
            if exc.code == -32099:  # the connection itself is gone: the caller handles it
                raise
            self.note(f"error: {exc.message}", "red")
            return None

    # --- sessions ----------------------------------------------------------------------------

    async def sessions(self, *, show: bool = True) -> list[SessionInfo]:
        raw = await self._request(AGENT_SESSIONS, {})
        try:
            self.listed = [] if raw is None else SessionsResult.model_validate(raw).sessions
        except ValidationError:
            self.note("the server's agent/sessions result is not in the protocol", "red")
            self.listed = []
        if show:
            if not self.listed:
                self.note("(no saved sessions in this workspace)")
            for number, info in enumerate(self.listed, start=1):
                here = " (current)" if info.session_id == self.chat.session_id else ""
                when = info.last_activity.replace("T", " ").rstrip("Z")
                self.note(
                    f"{number:>2}. {info.title or '(untitled)'}  ·  {info.turns} turn(s), "
                    f"{when}  ·  {info.session_id}{here}"
                )
            if self.listed:
                self.note("/resume N (or an id) continues one", "dim")
        return self.listed

    def _pick(self, target: str) -> str | None:
        if target.isdigit() and 1 <= int(target) <= len(self.listed):
            return self.listed[int(target) - 1].session_id
        return target or None

    async def resume(self, target: str) -> bool:
        """Open a saved session (an id, or a number of the last /sessions list) and show its
        last turns; False when it could not be opened."""
        if target.isdigit() and not self.listed:
            await self.sessions(show=False)
        session_id = self._pick(target)
        if session_id is None:
            self.note("which session? /sessions lists them", "yellow")
            return False
        raw = await self._request(AGENT_SESSION_LOAD, {"sessionId": session_id})
        if raw is None:
            return False
        if self.chat.args.json:
            self.chat.emit_json({"kind": "result", "method": AGENT_SESSION_LOAD, "result": raw})
        try:
            loaded = SessionLoadResult.model_validate(raw)
        except ValidationError:
            self.note("the server's agent/session/load result is not in the protocol", "red")
            return False
        self.chat.session_id = loaded.session_id
        self.turn_ids = [t.turn_id for t in loaded.turns if not t.rewound]
        out = self.chat.view.out
        if out is not None:
            out.line(f"Resumed: {loaded.title or loaded.session_id}", style="bold")
            older = len(loaded.turns) - HISTORY_SHOWN
            if older > 0:
                out.line(f"  ({older} earlier turn(s) not shown)", style="dim")
            for turn in loaded.turns[-HISTORY_SHOWN:]:
                mark = " (rewound)" if turn.rewound else ""
                out.line(f"> {_first_line(turn.prompt)}{mark}", style="dim")
                for call in turn.tool_calls:
                    out.line(f"  ▶ {call.name} ({call.status or 'interrupted'})", style="dim")
                if turn.text:
                    out.line(f"  {_first_line(turn.text)}", style="dim")
            out.line('Grants ("allow for session") are not carried over.', style="dim")
        return True

    async def resume_from_args(self) -> bool:
        """``--resume [ID]`` / ``--continue``; False when nothing could be opened."""
        args = self.chat.args
        if getattr(args, "continue_last", False):
            listed = await self.sessions(show=False)
            if not listed:
                self.note("no saved session in this workspace to continue", "red")
                return False
            return await self.resume(listed[0].session_id)
        target = getattr(args, "resume", None)
        if target is None:
            return True
        if target:
            return await self.resume(target)
        await self.sessions()
        if not self.listed:
            return False
        if not self.chat.lines.is_tty:
            self.note("no terminal to choose on: give the id, --resume ID", "red")
            return False
        self.chat.view.prompt("  Resume which one? (number, Enter = 1): ")
        line = await self.chat.lines.readline()
        self.chat.view.answered()
        return await self.resume((line or "").strip() or "1")

    def learn_turn(self, turn_id: str) -> None:
        if turn_id not in self.turn_ids:
            self.turn_ids.append(turn_id)

    def _turn(self, word: str | None) -> str | None:
        if word is None:
            return self.turn_ids[-1] if self.turn_ids else None
        if word.isdigit() and self.chat.session_id is not None:
            return f"{self.chat.session_id}:{word}"
        return word

    # --- changes and rewind ------------------------------------------------------------------

    async def changes(self, words: list[str]) -> None:
        turn_id = self._turn(words[0] if words else None)
        if self.chat.session_id is None or turn_id is None:
            self.note("no turn yet in this session", "yellow")
            return
        raw = await self._request(
            AGENT_CHANGES, {"sessionId": self.chat.session_id, "turnId": turn_id}
        )
        if raw is None:
            return
        try:
            result = ChangesResult.model_validate(raw)
        except ValidationError:
            self.note("the server's agent/changes result is not in the protocol", "red")
            return
        if not result.files:
            self.note(f"turn {turn_id} changed no file")
            return
        out = self.chat.view.out or self.chat.view.ask
        for change in result.files:
            out.line(f"{change.action}: {change.path}", style="bold")
            for line in change.diff.rstrip("\n").split("\n"):
                style = ""
                if line.startswith("+") and not line.startswith("+++"):
                    style = "green"
                elif line.startswith("-") and not line.startswith("---"):
                    style = "red"
                elif line.startswith("@@"):
                    style = "dim"
                out.line(line, style=style, prefix="  ")

    async def rewind(self, words: list[str]) -> None:
        force = "force" in words or "--force" in words
        words = [w for w in words if w not in ("force", "--force")]
        scope = next((w for w in words if w in SCOPES), "both")
        rest = [w for w in words if w not in SCOPES]
        turn_id = self._turn(rest[0] if rest else None)
        if self.chat.session_id is None or turn_id is None:
            self.note("no turn yet in this session", "yellow")
            return
        params: dict[str, Any] = {
            "sessionId": self.chat.session_id,
            "turnId": turn_id,
            "scope": scope,
            "force": force,
        }
        result = await self._rewind(params)
        if result is None:
            return
        if not result.applied and result.conflicts:
            for conflict in result.conflicts:
                self.note(f"! {conflict.path}: {conflict.detail}", "yellow")
            if not self.chat.lines.is_tty:
                self.note("nothing was changed; /rewind ... force overwrites them", "yellow")
                return
            self.chat.view.prompt("  Overwrite these too? [y/N]: ")
            line = await self.chat.lines.readline()
            self.chat.view.answered()
            if (line or "").strip().lower() not in ("y", "yes"):
                self.note("nothing was changed")
                return
            result = await self._rewind({**params, "force": True})
            if result is None:
                return
        for item in result.files:
            self.note(f"{item.action}: {item.path}", "green")
        for skipped in result.skipped:
            self.note(f"left as it is: {skipped.path} ({skipped.detail})", "yellow")
        if result.conversation:
            number = turn_id.rpartition(":")[2]
            self.turn_ids = [t for t in self.turn_ids if int(t.rpartition(":")[2]) < int(number)]
            self.note(f"the conversation is back to before turn {number}")
        if not result.files and not result.conversation:
            self.note("nothing to rewind: no file changed from that turn on")

    async def _rewind(self, params: dict[str, Any]) -> RewindResult | None:
        raw = await self._request(AGENT_REWIND, params)
        if raw is None:
            return None
        try:
            return RewindResult.model_validate(raw)
        except ValidationError:
            self.note("the server's agent/rewind result is not in the protocol", "red")
            return None
