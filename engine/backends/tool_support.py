"""Whether an OpenAI-compatible server honours ``tools``, found out once per server and model.

Some servers accept ``tools`` and drop them: llama.cpp's Python server with ``--chat_format
chatml`` renders neither the tools nor ``tool_choice: "required"`` into the prompt (measured: the
same prompt token count with and without tools, and a plain "Hello" for ``required``); only a
named ``tool_choice`` is forced. A model never shown its tools never calls them.

The probe is two one-token requests, the same message with and without the tools. A server that
shows the model its tools counts more prompt tokens with them; equal counts mean the tools were
dropped, and a server that refuses the request with tools (HTTP 4xx) but not without cannot take
them either: in both cases the backend describes the tools in the system prompt, as for local
models, and reads the calls from the text. Anything the probe cannot tell (no ``usage``, a server
error, a timeout) keeps native tools.
"""

from __future__ import annotations

import logging
from typing import Any, Literal

import httpx

logger = logging.getLogger(__name__)

ToolSupport = Literal["native", "prompt"]
PROBE_TIMEOUT_SECONDS = 60.0
_known: dict[tuple[str, str], ToolSupport] = {}


def known(base_url: str, model: str) -> ToolSupport | None:
    return _known.get((base_url, model))


def remember(base_url: str, model: str, support: ToolSupport) -> None:
    _known[(base_url, model)] = support


def forget_all() -> None:
    """For tests: probe again."""
    _known.clear()


async def _prompt_tokens(
    client: httpx.AsyncClient, url: str, body: dict[str, Any]
) -> tuple[int | None, int]:
    """``(usage.prompt_tokens, status)`` of one non-streamed request."""
    response = await client.post(url, json=body, timeout=PROBE_TIMEOUT_SECONDS)
    if response.status_code >= 400:
        return None, response.status_code
    try:
        usage = response.json().get("usage") or {}
        tokens = usage.get("prompt_tokens")
    except (ValueError, AttributeError):
        return None, response.status_code
    return (tokens if isinstance(tokens, int) else None), response.status_code


async def probe(
    client: httpx.AsyncClient, base_url: str, model: str, tools: list[dict[str, Any]]
) -> tuple[ToolSupport, str]:
    """How ``base_url`` treats ``tools``, and why (for the log and the user)."""
    url = base_url + "/chat/completions"
    base = {
        "model": model,
        "messages": [{"role": "user", "content": "Say OK."}],
        "max_tokens": 1,
        "temperature": 0,
        "stream": False,
    }
    try:
        plain, plain_status = await _prompt_tokens(client, url, base)
        with_tools, tools_status = await _prompt_tokens(client, url, base | {"tools": tools})
    except httpx.HTTPError as exc:
        return "native", f"the probe failed ({type(exc).__name__}); using native tools"
    if plain_status < 400 <= tools_status < 500:
        return "prompt", f"it refuses requests with tools (HTTP {tools_status})"
    if plain is None or with_tools is None:
        return "native", "it reports no token usage; using native tools"
    if with_tools <= plain:
        return "prompt", f"it ignores tools ({plain} prompt tokens with or without them)"
    return "native", f"it shows tools to the model ({with_tools - plain} more prompt tokens)"
