"""Engine events -> ACP ``session/update`` notifications, in order.

The coalescing of deltas is the LSP mode's (:class:`server.stream.CoalescingStream`); each event
then becomes an update here (message and thought chunks, ``tool_call`` / ``tool_call_update``),
and one sender task writes them in the order they were made. :meth:`AcpStream.drain` waits until
everything made so far is on the wire: a permission request and a prompt's response never
overtake the updates before them.

Model-written text (message and thought chunks, a tool call's title and content) goes through
:func:`server.protocol.display.visible`: ACP clients render it as they get it, terminal UIs among
them, so control, bidi and zero-width characters are written out here.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from acp import (
    start_tool_call,
    text_block,
    tool_content,
    update_agent_message_text,
    update_agent_thought_text,
    update_tool_call,
    update_user_message_text,
)
from acp.schema import ToolCallStatus, ToolKind

from engine.approvals import ApprovalRequest
from engine.backends.base import Message
from engine.events import (
    AgentEvent,
    ContentDelta,
    ReasoningDelta,
    StatusNote,
    ToolArgsDelta,
    ToolEnded,
    ToolOutput,
    ToolStarted,
    ToolStatus,
)
from server.approvals import shown_code
from server.protocol.display import visible
from server.stream import CoalescingStream

logger = logging.getLogger(__name__)

Send = Callable[[str, Any], Awaitable[None]]
"""``conn.session_update(session_id, update)`` of the SDK's agent-side connection."""

TOOL_KINDS: dict[str, ToolKind] = {
    "python": "execute",
    "terminal": "execute",
    "read_file": "read",
    "list_files": "read",
    "search_files": "search",
}
"""The ACP ``kind`` of each built-in tool; a tool not listed (edit tools: ``edit``) is ``other``
unless its name says it edits (see :func:`tool_kind`)."""

ENDED: dict[ToolStatus, ToolCallStatus] = {
    "completed": "completed",
    "failed": "failed",
    "denied": "failed",
    "timed_out": "failed",
    "cancelled": "failed",
}
"""ACP has four statuses; how each Gatehouse ending is shown (the text says which it was)."""

ENDED_TEXT: dict[ToolStatus, str] = {
    "denied": "Not run: denied.",
    "timed_out": "Not run: no answer to the permission request in time.",
    "cancelled": "Cancelled.",
}

STATUS_SHOWN_BY_TOOL_CALLS = ("Running ", "Waiting for approval: ", "Denied: ")
"""Status lines that a tool call's own status already shows: not repeated as thoughts."""

LIVE_OUTPUT_CHARS = 16_000
"""How much of a running call's output each update carries (its tail): ACP replaces a tool
call's content with every update, so resending all of a long output would grow quadratically."""


def tool_kind(name: str) -> ToolKind:
    if name in TOOL_KINDS:
        return TOOL_KINDS[name]
    if any(word in name for word in ("edit", "write", "patch", "replace")):
        return "edit"
    return "other"


def tool_title(name: str, arguments: dict[str, Any]) -> str:
    """A one-line title: the tool and the first line of what it runs or reads (display-safe)."""
    for key in ("command", "code", "path", "pattern"):
        value = arguments.get(key)
        if isinstance(value, str) and value:
            first = visible(value).split("\n", 1)[0]
            more = " …" if "\n" in value.strip() else ""
            return f"{name}: {first}{more}"
    return name


def code_block(text: str) -> str:
    """``text`` display-safe inside a Markdown fence that it cannot close."""
    shown = visible(text)
    if shown.endswith("\n"):
        shown = shown[:-1]
    fence = "```"
    while fence in shown:
        fence += "`"
    return f"{fence}\n{shown}\n{fence}"


def call_content(name: str, arguments: dict[str, Any]) -> str:
    """What a call runs or reads, in full, display-safe."""
    return code_block(shown_code(ApprovalRequest("", name, arguments, "code_execution")))


@dataclass
class _Call:
    name: str
    arguments: dict[str, Any]
    output: list[str] = field(default_factory=list)
    output_chars: int = 0


class AcpStream(CoalescingStream):
    """One prompt turn's ``session/update`` notifications for one session."""

    def __init__(self, send: Send, session_id: str, *, window: float = 0.01) -> None:
        super().__init__(self._convert, window=window)
        self._send_update = send
        self._session_id = session_id
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        self._calls: dict[str, _Call] = {}
        self._held: dict[str, str] = {}
        self._task = asyncio.get_running_loop().create_task(self._pump())
        self.broken = False
        """A write failed (the client went away): nothing more is sent."""

    # --- conversion -----------------------------------------------------------------------

    def _convert(self, event: AgentEvent) -> None:
        update = self._update_for(event)
        if update is not None:
            self._queue.put_nowait(update)

    def _update_for(self, event: AgentEvent) -> Any:
        if isinstance(event, ContentDelta):
            return update_agent_message_text(self._safe("message", event.text))
        if isinstance(event, ReasoningDelta):
            return update_agent_thought_text(self._safe("thought", event.text))
        if isinstance(event, ToolStarted):
            self._calls[event.tool_call_id] = _Call(event.name, event.arguments)
            return start_tool_call(
                event.tool_call_id,
                tool_title(event.name, event.arguments),
                kind=tool_kind(event.name),
                status="pending" if event.awaiting_confirmation else "in_progress",
                content=[tool_content(text_block(call_content(event.name, event.arguments)))],
                raw_input=event.arguments,
            )
        if isinstance(event, ToolOutput):
            return self._output(event)
        if isinstance(event, ToolEnded):
            return self._ended(event)
        if isinstance(event, StatusNote):
            if event.text.startswith(STATUS_SHOWN_BY_TOOL_CALLS):
                return None
            return update_agent_thought_text(event.text + "\n")
        assert isinstance(event, ToolArgsDelta)
        return None  # a preview of a call being written: the tool_call follows

    def _safe(self, kind: str, text: str) -> str:
        """Model text, display-safe (ACP clients render it as it is; terminal UIs among them).
        A ``\r`` at the end waits for the next delta: it may be half of a ``\r\n``."""
        text = self._held.pop(kind, "") + text
        if text.endswith("\r"):
            self._held[kind], text = "\r", text[:-1]
        return visible(text)

    def _release_held(self) -> None:
        """A ``\r`` that ended the turn is shown (as ``\x0d``): nothing the model wrote is lost."""
        for kind, text in list(self._held.items()):
            make = update_agent_message_text if kind == "message" else update_agent_thought_text
            self._queue.put_nowait(make(visible(text)))
        self._held.clear()

    def _content(self, call: _Call, tail: str | None = None) -> list[Any]:
        blocks = [tool_content(text_block(call_content(call.name, call.arguments)))]
        output = "".join(call.output)
        if output:
            shown = output[-LIVE_OUTPUT_CHARS:]
            cut = "(earlier output not shown)\n" if len(output) > len(shown) else ""
            blocks.append(tool_content(text_block(cut + code_block(shown))))
        if tail:
            blocks.append(tool_content(text_block(tail)))
        return blocks

    def _output(self, event: ToolOutput) -> Any:
        call = self._calls.get(event.tool_call_id)
        if call is None:
            return None
        call.output.append(event.text)
        call.output_chars += len(event.text)
        if call.output_chars > 4 * LIVE_OUTPUT_CHARS:  # keep only what can still be shown
            joined = "".join(call.output)[-LIVE_OUTPUT_CHARS:]
            call.output, call.output_chars = [joined], len(joined)
        return update_tool_call(
            event.tool_call_id, status="in_progress", content=self._content(call)
        )

    def _ended(self, event: ToolEnded) -> Any:
        call = self._calls.pop(event.tool_call_id, None) or _Call(event.name, {})
        said = ENDED_TEXT.get(event.status)
        if event.status == "denied" and event.result and not event.result.startswith("The user"):
            said = "Not run: " + visible(event.result)
        if event.status in ("completed", "failed") and not call.output:
            call.output.append(event.result)
        if event.sandbox is not None:
            network = "on" if event.sandbox.network else "off"
            level = f"isolation: {event.sandbox.level}, network: {network}"
            exit_code = "" if event.exit_code is None else f"exit code {event.exit_code}, "
            said = (said + " " if said else "") + f"({exit_code}{level})"
        raw: dict[str, Any] = {"status": event.status, "exitCode": event.exit_code}
        raw["result"] = event.result
        return update_tool_call(
            event.tool_call_id,
            status=ENDED[event.status],
            content=self._content(call, said),
            raw_output=raw,
        )

    def replay(self, messages: list[Message]) -> None:
        """A loaded session's conversation, as ``session/load`` replays it: what the user and
        the model said (tool calls and results are in the model's words)."""
        for message in messages:
            if message.role == "user":
                self._queue.put_nowait(update_user_message_text(message.content))
            elif message.role == "assistant" and message.content:
                self._queue.put_nowait(update_agent_message_text(visible(message.content)))

    # --- approvals ------------------------------------------------------------------------

    def mark_running(self, tool_call_id: str) -> None:
        """An approved call starts: its status goes from pending to in_progress."""
        self.flush()
        self._queue.put_nowait(update_tool_call(tool_call_id, status="in_progress"))

    # --- sending --------------------------------------------------------------------------

    async def _pump(self) -> None:
        while True:
            update = await self._queue.get()
            try:
                if not self.broken:
                    await self._send_update(self._session_id, update)
            except Exception as exc:  # the client went away: the turn ends on its own
                self.broken = True
                logger.info("session/update could not be sent: %s", exc)
            finally:
                self._queue.task_done()

    async def drain(self) -> None:
        """Wait until every update made so far is on the wire."""
        self.flush()
        await self._queue.join()

    async def close(self) -> None:
        self.flush()
        self._release_held()
        await self.drain()
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
