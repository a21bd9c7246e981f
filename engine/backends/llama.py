"""The llama.cpp backend (llama-cpp-python), the default: a GGUF model in this process.

``llama_cpp`` is imported when the model loads, never at server start-up. Generation runs in an
executor of the backend's own; tokens reach the event loop thread-safely and a stop flag checked
per token stops generation within one token when a turn is cancelled. The chat template comes
from the GGUF metadata.

For small models, an optional grammar mode constrains the first model turn of a request to one
structurally valid tool call (``<tool_call>{"name": ..., "arguments": ...}</tool_call>``, with
the name and arguments drawn from the tools' JSON schemas); later turns are free text.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import AsyncGenerator, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from engine.backends.base import (
    Backend,
    BackendError,
    Finish,
    GenerationOptions,
    Message,
    Notice,
    ToolSpec,
)
from engine.backends.threaded import model_executor, stream_in_thread
from engine.prompting import chat_messages, context_notice, fit_to_context
from engine.toolcalls.markup import call_grammar_root, stop_markup

logger = logging.getLogger(__name__)

DEFAULT_MAX_TOKENS = 512
DEFAULT_CONTEXT = 4096


def tool_call_grammar(tools: Sequence[ToolSpec]) -> str:
    """GBNF for exactly one ``<tool_call>`` whose JSON matches one of the tools' schemas."""
    from llama_cpp.llama_grammar import json_schema_to_gbnf  # noqa: PLC0415 - heavy import

    schema = {
        "oneOf": [
            {
                "type": "object",
                "properties": {
                    "name": {"const": spec.name},
                    "arguments": spec.parameters or {"type": "object"},
                },
                "required": ["name", "arguments"],
            }
            for spec in tools
        ]
    }
    body: str = json_schema_to_gbnf(json.dumps(schema))
    body = body.replace("root ::=", "call ::=", 1)
    return call_grammar_root("call") + body


class LlamaCppBackend(Backend):
    name = "llama_cpp"
    one_at_a_time = True

    def __init__(
        self,
        model_path: Path,
        *,
        model_name: str | None = None,
        threads: int | None = None,
        context: int = DEFAULT_CONTEXT,
        tool_grammar: bool = False,
        min_p: float | None = None,
    ) -> None:
        self.model = model_name or model_path.stem
        self._min_p = min_p
        self.path = model_path
        self._threads = threads
        self._context = context
        self._tool_grammar = tool_grammar
        self._executor = model_executor("llama")
        self._llm: Any = None
        self._load_lock = asyncio.Lock()

    # --- loading ---------------------------------------------------------------------------

    def _load_blocking(self) -> Any:
        if not self.path.is_file():
            raise BackendError(f"Model file not found: {self.path}")
        try:
            from llama_cpp import Llama  # noqa: PLC0415 - heavy import, only when loading
        except ImportError as exc:
            raise BackendError(
                f"The llama_cpp backend needs llama-cpp-python ({exc}); "
                "install it with `pip install llama-cpp-python`"
            ) from None
        try:
            return Llama(
                model_path=str(self.path),
                n_ctx=self._context,
                n_threads=self._threads,
                n_threads_batch=self._threads,
                verbose=False,
            )
        except (ValueError, RuntimeError, OSError) as exc:
            raise BackendError(f"Cannot load model {self.path}: {exc}") from None

    async def load(self, progress: Callable[[str], None] | None = None) -> None:
        async with self._load_lock:
            if self._llm is not None:
                return
            size = self.path.stat().st_size / 1e6 if self.path.is_file() else 0
            if progress:
                progress(f"Loading {self.model} ({size:.0f} MB)…")
            started = time.monotonic()
            loop = asyncio.get_running_loop()
            self._llm = await loop.run_in_executor(self._executor, self._load_blocking)
            if progress:
                progress(f"Loaded {self.model} in {time.monotonic() - started:.1f} s")

    async def close(self) -> None:
        llm, self._llm = self._llm, None
        if llm is not None:
            await asyncio.get_running_loop().run_in_executor(self._executor, llm.close)
        self._executor.shutdown(wait=False)

    # --- generation ------------------------------------------------------------------------

    def _fits(self, llm: Any, max_tokens: int) -> Callable[[list[dict[str, str]]], bool]:
        budget = self._context - max_tokens

        def fits(chat: list[dict[str, str]]) -> bool:
            text = "".join(m["role"] + m["content"] for m in chat)
            # ~16 tokens of template markup per message on top of the text itself.
            tokens = len(llm.tokenize(text.encode("utf-8"), add_bos=False)) + 16 * len(chat)
            return tokens <= budget

        return fits

    def _generate(
        self,
        llm: Any,
        chat: list[dict[str, str]],
        tools: Sequence[ToolSpec],
        options: GenerationOptions,
        constrain: bool,
    ) -> Callable[[threading.Event], Iterator[str | Notice | Finish]]:
        def run(stop: threading.Event) -> Iterator[str | Notice | Finish]:
            max_tokens = options.max_tokens or DEFAULT_MAX_TOKENS
            messages, dropped = fit_to_context(chat, self._fits(llm, max_tokens))
            if dropped:
                yield context_notice(self._context, dropped)
            kwargs: dict[str, Any] = {
                "messages": messages,
                "stream": True,
                "max_tokens": max_tokens,
                "temperature": 0.0 if options.temperature is None else options.temperature,
                "repeat_penalty": 1.1,
                # Small models imitate tool markup instead of answering: stop there.
                "stop": list(stop_markup(calls=bool(tools))),
            }
            if options.seed is not None:
                kwargs["seed"] = options.seed
            if self._min_p is not None:
                kwargs["min_p"] = self._min_p
            if constrain:
                from llama_cpp import LlamaGrammar  # noqa: PLC0415

                kwargs["grammar"] = LlamaGrammar.from_string(
                    tool_call_grammar(tools), verbose=False
                )
            finish = "stop"
            chunks = llm.create_chat_completion(**kwargs)
            try:
                for chunk in chunks:
                    if stop.is_set():
                        return
                    choice = chunk["choices"][0]
                    text = choice.get("delta", {}).get("content")
                    if text:
                        yield text
                    if choice.get("finish_reason") == "length":
                        finish = "length"
            finally:
                chunks.close()
            yield Finish("length" if finish == "length" else "stop")

        return run

    async def stream(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        options: GenerationOptions,
    ) -> AsyncGenerator[str | Notice | Finish, None]:
        await self.load()
        chat = chat_messages(messages, tools)
        # Grammar mode forces a call on the first model turn of a request only: the last
        # message is then the user's prompt, not a tool result.
        last = messages[-1] if messages else None
        constrain = bool(self._tool_grammar and tools and last is not None and last.role == "user")
        generate = self._generate(self._llm, chat, tools, options, constrain)
        async for item in stream_in_thread(generate, self._executor):
            yield item
