"""The transformers backend: a causal LM from a safetensors folder or a ``.gguf`` file, on the CPU.

torch and transformers take seconds to import, so nothing heavy is imported until :meth:`load`
(or the first :meth:`stream`). Loading and generating run in the backend's own single-worker
executor. ``model.generate`` runs in a helper thread of its own and hands text to a
``TextIteratorStreamer``; the executor's generator reads that streamer, so a cancel is seen both
by a stopping criterion (after each token) and by the reader (after each delta).
"""

from __future__ import annotations

import asyncio
import gc
import threading
from collections.abc import AsyncGenerator, Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import aclosing
from functools import partial
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

DEFAULT_MAX_TOKENS = 512

Progress = Callable[[str], None]


def _short(exc: BaseException) -> str:
    """The first line of an exception's message, trimmed: transformers' messages run long."""
    lines = str(exc).strip().splitlines()
    text = lines[0] if lines else type(exc).__name__
    return text if len(text) <= 200 else text[:197] + "..."


def chatml(chat: Sequence[dict[str, str]]) -> str:
    """A ChatML rendering for tokenizers that carry no chat template."""
    turns = [f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in chat]
    return "".join(turns) + "<|im_start|>assistant\n"


def _stop_criterion(stop: threading.Event) -> Any:
    """A transformers stopping criterion that ends generation once ``stop`` is set."""
    import torch  # noqa: PLC0415 - heavy imports happen only when a model is used
    from transformers import StoppingCriteria  # noqa: PLC0415

    class StopOnEvent(StoppingCriteria):  # type: ignore[misc]
        def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
            return torch.full((input_ids.shape[0],), stop.is_set(), dtype=torch.bool)

    return StopOnEvent()


class TransformersBackend(Backend):
    """A Hugging Face transformers model; ``model`` is a safetensors folder or a ``.gguf`` file."""

    name = "transformers"
    one_at_a_time = True

    def __init__(
        self,
        model: str,
        *,
        threads: int | None = None,
        max_context: int | None = None,
        model_name: str | None = None,
    ) -> None:
        self.path = model
        self.model = model_name or model
        self.threads = threads
        self.max_context = max_context
        self._executor: ThreadPoolExecutor | None = None
        self._tokenizer: Any = None
        self._model: Any = None

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def _pool(self) -> ThreadPoolExecutor:
        if self._executor is None:
            self._executor = model_executor(self.name)
        return self._executor

    async def load(self, progress: Progress | None = None) -> None:
        """Load the tokenizer and the weights (once); ``progress`` is called on the event loop."""
        if self.loaded:
            return
        loop = asyncio.get_running_loop()

        def report(text: str) -> None:
            if progress is not None:
                loop.call_soon_threadsafe(progress, text)

        # One worker: a second load queued behind the first finds the model loaded.
        await loop.run_in_executor(self._pool(), self._load_sync, report)

    def _source(self) -> tuple[str, dict[str, Any]]:
        """Where transformers loads from: a folder, or a GGUF file's folder and name."""
        path = Path(self.path).expanduser()
        if path.is_dir():
            return str(path), {}
        if path.is_file():
            if path.suffix.lower() != ".gguf":
                raise BackendError(f"Model {path} is neither a model folder nor a .gguf file")
            return str(path.parent), {"gguf_file": path.name}
        raise BackendError(f"Model not found: {path}")

    def _load_sync(self, report: Progress) -> None:
        if self.loaded:
            return
        source, extra = self._source()
        import torch  # noqa: PLC0415 - heavy imports happen only when a model is used
        from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: PLC0415
        from transformers.utils import logging as hf_logging  # noqa: PLC0415

        hf_logging.disable_progress_bar()  # stderr is a log here, not a terminal
        if self.threads:
            torch.set_num_threads(self.threads)
        try:
            report("Loading tokenizer…")
            tokenizer = AutoTokenizer.from_pretrained(source, local_files_only=True, **extra)
            report("Loading weights…")
            model = AutoModelForCausalLM.from_pretrained(source, local_files_only=True, **extra)
        except Exception as exc:  # OSError, ValueError, struct.error...: all mean "cannot load"
            raise BackendError(f"Cannot load model {self.path}: {_short(exc)}") from None
        model.eval()
        self._tokenizer, self._model = tokenizer, model
        report("Model loaded.")

    async def stream(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        options: GenerationOptions,
    ) -> AsyncGenerator[str | Notice | Finish, None]:
        await self.load()
        chat = chat_messages(messages, tools)
        generate = partial(self._generate, chat, options)
        async with aclosing(stream_in_thread(generate, self._pool())) as deltas:
            async for item in deltas:
                yield item

    def _context_size(self) -> int | None:
        if self.max_context:
            return self.max_context
        size = getattr(self._model.config, "max_position_embeddings", None)
        return size if isinstance(size, int) and size > 0 else None

    def _encode(self, chat: list[dict[str, str]]) -> Any:
        tokenizer = self._tokenizer
        if getattr(tokenizer, "chat_template", None):
            prompt = tokenizer.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)
        else:
            prompt = chatml(chat)
        # The template writes any BOS itself; adding special tokens again would double it.
        return tokenizer(prompt, add_special_tokens=False, return_tensors="pt")

    def _fit(self, chat: list[dict[str, str]], max_tokens: int) -> tuple[Any, int]:
        """Encode the chat, leaving out the oldest turns until the answer fits the context too
        (see :func:`engine.prompting.fit_to_context`). Returns the encoding and how many
        messages were left out."""
        context = self._context_size()
        encodings: list[Any] = []

        def fits(candidate: list[dict[str, str]]) -> bool:
            encodings.append(self._encode(candidate))
            size = int(encodings[-1]["input_ids"].shape[1])
            return context is None or size + max_tokens <= context

        _kept, dropped = fit_to_context(chat, fits)
        return encodings[-1], dropped

    def _generate(
        self, chat: list[dict[str, str]], options: GenerationOptions, stop: threading.Event
    ) -> Iterator[str | Notice | Finish]:
        """Runs in the executor: start ``model.generate`` in a helper thread, read its streamer."""
        import torch  # noqa: PLC0415 - heavy imports happen only when a model is used
        from transformers import StoppingCriteriaList, TextIteratorStreamer  # noqa: PLC0415

        tokenizer, model = self._tokenizer, self._model
        if model is None:
            raise BackendError(f"Model {self.model} was closed")
        limit = options.max_tokens or DEFAULT_MAX_TOKENS
        encoded, dropped = self._fit(list(chat), limit)
        prompt_tokens = int(encoded["input_ids"].shape[1])
        context = self._context_size()
        if dropped:
            yield context_notice(context, dropped)
        if context is not None:
            if prompt_tokens >= context:
                raise BackendError(
                    f"The prompt is {prompt_tokens} tokens; {self.model} holds {context}"
                )
            limit = min(limit, context - prompt_tokens)
        temperature = options.temperature or 0.0
        sampling: dict[str, Any] = {"do_sample": temperature > 0}
        if temperature > 0:
            sampling["temperature"] = temperature
        if options.seed is not None:
            torch.manual_seed(options.seed)
        eos = model.generation_config.eos_token_id
        eos_ids = set(eos if isinstance(eos, list) else [] if eos is None else [eos])
        if tokenizer.eos_token_id is not None:
            eos_ids.add(tokenizer.eos_token_id)
        pad = tokenizer.pad_token_id
        if pad is None:
            pad = min(eos_ids, default=0)

        streamer = TextIteratorStreamer(tokenizer, skip_prompt=True, skip_special_tokens=True)
        result: dict[str, Any] = {}

        def run() -> None:
            try:
                with torch.inference_mode():
                    result["output"] = model.generate(
                        **encoded,
                        streamer=streamer,
                        stopping_criteria=StoppingCriteriaList([_stop_criterion(stop)]),
                        max_new_tokens=limit,
                        pad_token_id=pad,
                        **sampling,
                    )
            except BaseException as exc:
                result["error"] = exc
                streamer.end()  # release the reader below

        worker = threading.Thread(target=run, name="gatehouse-transformers-generate", daemon=True)
        worker.start()
        finished = False
        try:
            for text in streamer:
                if stop.is_set():
                    break
                if text:
                    yield text
            else:
                finished = True
        finally:
            if not finished:
                stop.set()  # cancelled, or closed early: end generate() after this token
            worker.join()
        if "error" in result:
            raise BackendError(f"Generation failed: {_short(result['error'])}") from result["error"]
        if not finished or stop.is_set():
            return
        new = result["output"][0, prompt_tokens:].tolist()
        ended = bool(new) and new[-1] in eos_ids
        yield Finish("length" if len(new) >= limit and not ended else "stop")

    async def close(self) -> None:
        """Free the model; the backend loads it again if it is used afterwards."""
        executor = self._executor
        if executor is None:
            return
        self._executor = None
        loop = asyncio.get_running_loop()
        # Queued behind any generation still running on the single worker.
        await loop.run_in_executor(executor, self._unload)
        executor.shutdown(wait=False)

    def _unload(self) -> None:
        self._tokenizer = self._model = None
        gc.collect()
