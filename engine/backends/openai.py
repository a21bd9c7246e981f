"""The OpenAI-compatible backend: any ``/v1/chat/completions`` server (vLLM, llama.cpp's server,
Ollama, TGI...) over HTTP, streamed as server-sent events, with native ``tools``.

The loop's parser knows one call format, so this backend translates both ways: native
``tool_calls`` fragments are reassembled and come out as Hermes ``<tool_call>`` markup, and the
markup in the conversation goes back as native ``tool_calls`` whose ids are those of the tool
results that follow. A server that ignores ``tools`` (detected once per server and model, see
:mod:`engine.backends.tool_support`) is sent the conversation local models see instead: the tools
described in the system prompt, calls and results as markup in the text. Reasoning
(``reasoning_content`` or ``reasoning``) comes out as ``<think>...</think>``. The API key goes
into the Authorization header only: never into a log, an error message or a repr.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncGenerator, Callable, Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from engine.backends import tool_support
from engine.backends.base import (
    Backend,
    BackendError,
    Finish,
    GenerationOptions,
    Message,
    Notice,
    ToolSpec,
)
from engine.backends.tool_support import ToolSupport
from engine.prompting import BASE_PROMPT, chat_messages
from engine.toolcalls import ParsedToolCall, TextPiece, ToolCallParser
from engine.toolcalls.markup import call_markup, response_markup, stop_markup

logger = logging.getLogger(__name__)

ERROR_BODY_LIMIT = 300
LOAD_TIMEOUT_SECONDS = 10.0
CONNECT_TIMEOUT_SECONDS = 10.0


def _split_assistant(raw: str, *, with_calls: bool) -> tuple[str, list[ParsedToolCall]]:
    """The visible content of a raw assistant turn (reasoning left out) and its parsed calls."""
    parser = ToolCallParser(tools_enabled=with_calls)
    events = parser.feed(raw) + parser.finish()
    content = "".join(e.text for e in events if isinstance(e, TextPiece) and e.kind == "content")
    return content, [e for e in events if isinstance(e, ParsedToolCall)]


def openai_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Our conversation as OpenAI chat messages.

    An assistant turn followed by tool results carries one native call per result, in order, with
    the result's ``tool_call_id``; calls that got no result are left out (a server rejects a call
    without an answer). A turn with no results keeps its text, markup included. Reasoning is
    never sent back.
    """
    out: list[dict[str, Any]] = []
    if not any(m.role == "system" for m in messages):
        out.append({"role": "system", "content": BASE_PROMPT})
    i = 0
    while i < len(messages):
        message = messages[i]
        i += 1
        if message.role == "tool":  # a result with no assistant turn before it
            out.append({"role": "user", "content": response_markup(message.name, message.content)})
            continue
        if message.role != "assistant":
            out.append({"role": message.role, "content": message.content})
            continue
        results: list[Message] = []
        while i < len(messages) and messages[i].role == "tool":
            results.append(messages[i])
            i += 1
        content, calls = _split_assistant(message.content, with_calls=bool(results))
        native: list[dict[str, Any]] = []
        answers: list[dict[str, Any]] = []
        for n, result in enumerate(results):
            call = calls[n] if n < len(calls) else None
            call_id = result.tool_call_id or f"call_{len(out)}_{n}"
            name = (call.name if call else "") or result.name or "unknown"
            arguments = json.dumps(call.arguments if call else {}, ensure_ascii=False)
            function = {"name": name, "arguments": arguments}
            native.append({"id": call_id, "type": "function", "function": function})
            answers.append({"role": "tool", "tool_call_id": call_id, "content": result.content})
        # A call-only turn has content "", not null: llama_cpp.server rejects a null (HTTP 500)
        # and crashes in its chat formatter on a missing key; "" is accepted everywhere.
        entry: dict[str, Any] = {"role": "assistant", "content": content if content.strip() else ""}
        if native:
            entry["tool_calls"] = native
        out.append(entry)
        out.extend(answers)
    return out


def openai_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    empty = {"type": "object", "properties": {}}
    functions = [
        {"name": t.name, "description": t.description, "parameters": t.parameters or empty}
        for t in tools
    ]
    return [{"type": "function", "function": f} for f in functions]


def _error_message(data: Any) -> str | None:
    """The message in an error document: ``{"error": {"message": ...}}``, ``{"detail": ...}``..."""
    if not isinstance(data, dict):
        return None
    error = data.get("error", data.get("detail", data.get("message")))
    if isinstance(error, dict):
        error = error.get("message", error)
    if error is None:
        return None
    return error if isinstance(error, str) else json.dumps(error)


def _call_text(name: str, arguments: str) -> str:
    """Hermes markup for a reassembled native call; arguments that are not a JSON object stay
    as they came, so the parser tells the model exactly what was wrong."""
    try:
        value: Any = json.loads(arguments) if arguments.strip() else {}
    except json.JSONDecodeError:
        value = arguments
    return call_markup(name, value)


class _Calls:
    """Native tool-call fragments, accumulated per index."""

    def __init__(self) -> None:
        self._slots: dict[int, dict[str, str]] = {}

    def add(self, fragment: dict[str, Any]) -> None:
        index = fragment.get("index")
        call_id = fragment.get("id")
        if not isinstance(index, int):  # some servers send whole calls without an index
            same = [i for i, s in self._slots.items() if call_id and s["id"] == call_id]
            last = max(self._slots, default=-1)
            index = same[0] if same else last if last >= 0 and not call_id else last + 1
        slot = self._slots.setdefault(index, {"id": "", "name": "", "arguments": ""})
        if isinstance(call_id, str) and call_id:
            slot["id"] = call_id
        function = fragment.get("function") or {}
        name = function.get("name")
        if isinstance(name, str) and name != slot["name"]:
            slot["name"] += name
        arguments = function.get("arguments")
        if isinstance(arguments, dict):
            arguments = json.dumps(arguments, ensure_ascii=False)
        if isinstance(arguments, str):
            slot["arguments"] += arguments

    def drain(self) -> list[str]:
        slots, self._slots = self._slots, {}
        return [
            _call_text(s["name"], s["arguments"])
            for _, s in sorted(slots.items())
            if s["name"] or s["arguments"]
        ]


class OpenAIBackend(Backend):
    name = "openai"

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout_seconds: float = 600,
        tools: ToolSupport | None = None,
    ) -> None:
        """``tools``: how the server takes tools; None: find out on the first request with tools."""
        parts = urlsplit(base_url.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise BackendError(f"The base URL must be http(s)://host[:port]/path, got {base_url!r}")
        self.model = model
        self.base_url = base_url.strip().rstrip("/")
        # Shown in messages: never a user:password part of the URL.
        netloc = parts.netloc.rpartition("@")[2]
        self.shown_url = urlunsplit((parts.scheme, netloc, parts.path, "", "")).rstrip("/")
        self._api_key = api_key or None
        self._timeout = httpx.Timeout(
            timeout_seconds, connect=min(CONNECT_TIMEOUT_SECONDS, timeout_seconds)
        )
        self._client: httpx.AsyncClient | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None
        self._tool_support = tools
        self._probe_lock = asyncio.Lock()
        self.probes = 0

    @property
    def tool_support(self) -> ToolSupport | None:
        """``native``, ``prompt`` (tools described in the system prompt), or None: not known yet."""
        return self._tool_support or tool_support.known(self.shown_url, self.model)

    async def _tool_mode(self, tools: Sequence[ToolSpec]) -> tuple[ToolSupport, str | None]:
        """How this server takes tools, probing it once; and a note when it was just found."""
        async with self._probe_lock:
            support = self.tool_support
            if support is not None:
                return support, None
            self.probes += 1
            support, why = await tool_support.probe(
                self._http(), self.base_url, self.model, openai_tools(tools)
            )
            tool_support.remember(self.shown_url, self.model, support)
            logger.info("tools on %s: %s (%s)", self.shown_url, support, why)
            if support == "native":
                return support, None
            return support, f"{self.shown_url}: {why}; the tools are described in the prompt"

    def __repr__(self) -> str:
        key = "set" if self._api_key else "none"
        return f"OpenAIBackend(base_url={self.shown_url!r}, model={self.model!r}, api_key={key})"

    def _clip(self, text: str) -> str:
        """Server text fit for an error message: the key masked, at most 300 characters."""
        text = text.replace(self._api_key, "***") if self._api_key else text
        return text if len(text) <= ERROR_BODY_LIMIT else text[:ERROR_BODY_LIMIT] + "…"

    def _http(self) -> httpx.AsyncClient:
        """One connection pool per event loop (a pooled connection cannot outlive its loop)."""
        loop = asyncio.get_running_loop()
        if self._client is None or self._client.is_closed or self._client_loop is not loop:
            headers = {"Accept": "text/event-stream, application/json"}
            if self._api_key:
                headers["Authorization"] = f"Bearer {self._api_key}"
            self._client = httpx.AsyncClient(headers=headers, timeout=self._timeout)
            self._client_loop = loop
        return self._client

    # --- errors ----------------------------------------------------------------------------

    def _transport_error(self, exc: httpx.HTTPError) -> BackendError:
        detail = str(exc) or type(exc).__name__
        if isinstance(exc, httpx.TimeoutException):
            text = f"{self.shown_url} did not answer in time ({type(exc).__name__}: {detail})"
        elif isinstance(exc, httpx.ConnectError):
            text = f"Cannot connect to {self.shown_url}: {detail}"
        else:
            text = f"The connection to {self.shown_url} failed: {detail}"
        return BackendError(self._clip(text))

    async def _status_error(self, response: httpx.Response) -> BackendError:
        try:
            body = (await response.aread()).decode("utf-8", "replace").strip()
        except httpx.HTTPError:
            body = ""
        try:
            detail = _error_message(json.loads(body)) or body
        except json.JSONDecodeError:
            detail = body
        detail = self._clip(detail)
        status = f"HTTP {response.status_code} {response.reason_phrase}".rstrip()
        return BackendError(
            f"{self.shown_url} answered {status}" + (f": {detail}" if detail else "")
        )

    # --- loading ---------------------------------------------------------------------------

    async def load(self, progress: Callable[[str], None] | None = None) -> None:
        """Check that the server answers (``GET /models``; a server without it is fine)."""
        if progress:
            progress(f"Connecting to {self.shown_url}…")
        started = time.monotonic()
        try:
            response = await self._http().get(
                self.base_url + "/models", timeout=LOAD_TIMEOUT_SECONDS
            )
        except httpx.HTTPError as exc:
            raise self._transport_error(exc) from None
        if response.status_code >= 400 and response.status_code != 404:
            raise await self._status_error(response)
        try:
            listed = response.json()["data"] if response.status_code == 200 else []
            served = [str(m["id"]) for m in listed]
        except (ValueError, KeyError, TypeError):
            served = []
        missing = served and self.model not in served
        note = f" (it lists {', '.join(served[:5])}, not {self.model})" if missing else ""
        if progress:
            elapsed = time.monotonic() - started
            progress(f"Connected to {self.shown_url} in {elapsed:.1f} s{note}")

    async def close(self) -> None:
        client, self._client = self._client, None
        if client is not None and self._client_loop is asyncio.get_running_loop():
            await client.aclose()

    # --- generation ------------------------------------------------------------------------

    def _body(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        options: GenerationOptions,
        support: ToolSupport = "native",
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": openai_messages(messages)}
        if tools and support == "prompt":
            body["messages"] = chat_messages(messages, tools)
            body["stop"] = list(stop_markup(calls=True))
        elif tools:  # no tool_choice: "auto" is the default, and some servers reject it spelled out
            body["tools"] = openai_tools(tools)
        sampling = {
            "max_tokens": options.max_tokens,
            "temperature": options.temperature,
            "seed": options.seed,
        }
        body.update((key, value) for key, value in sampling.items() if value is not None)
        return body | {"stream": True}

    async def stream(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        options: GenerationOptions,
    ) -> AsyncGenerator[str | Notice | Finish, None]:
        support: ToolSupport = "native"
        if tools:
            support, note = await self._tool_mode(tools)
            if note is not None:
                yield Notice(note)
        body = self._body(messages, tools, options, support)
        logger.debug("POST %s/chat/completions (model %s)", self.shown_url, self.model)
        try:
            # Leaving this block (end, error, or the consumer's cancel/aclose) closes the response.
            async with self._http().stream(
                "POST", self.base_url + "/chat/completions", json=body
            ) as response:
                if response.status_code >= 400:
                    raise await self._status_error(response)
                async for item in self._deltas(response):
                    yield item
        except httpx.HTTPError as exc:
            raise self._transport_error(exc) from None

    async def _deltas(self, response: httpx.Response) -> AsyncGenerator[str | Finish, None]:
        calls = _Calls()
        thinking = False
        finish = ""
        async for line in response.aiter_lines():
            if not line.startswith("data:"):
                continue  # blank lines between events, comments, "event:" and "id:" fields
            data = line[5:].strip()
            if data == "[DONE]":
                finish = finish or "stop"
                break
            try:
                chunk = json.loads(data)
            except json.JSONDecodeError:
                snippet = self._clip(data)
                raise BackendError(f"{self.shown_url} sent a non-JSON event: {snippet}") from None
            if not isinstance(chunk, dict):
                continue
            if chunk.get("error"):
                detail = self._clip(_error_message(chunk) or "")
                raise BackendError(f"{self.shown_url} reported an error mid-stream: {detail}")
            choices = chunk.get("choices") or [{}]
            choice = choices[0] if isinstance(choices[0], dict) else {}
            delta = choice.get("delta") or {}
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            if isinstance(reasoning, str) and reasoning:
                if not thinking:
                    thinking = True
                    yield "<think>"
                yield reasoning
            content = delta.get("content")
            fragments = delta.get("tool_calls") or []
            if thinking and (content or fragments):
                thinking = False
                yield "</think>"
            if isinstance(content, str) and content:
                yield content
            for fragment in fragments:
                if isinstance(fragment, dict):
                    calls.add(fragment)
            reason = choice.get("finish_reason")
            if reason:
                finish = str(reason)
                if reason == "tool_calls":
                    for text in calls.drain():
                        yield text
        if not finish:  # e.g. the server failed after it had sent its headers
            raise BackendError(
                f"The stream from {self.shown_url} ended before the model finished "
                "(no finish_reason, no [DONE]): see the server's log"
            )
        if thinking:
            yield "</think>"
        for text in calls.drain():
            yield text
        yield Finish("length" if finish == "length" else "stop")
