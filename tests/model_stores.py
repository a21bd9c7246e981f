"""Model stores as Ollama, LM Studio and the Hugging Face cache lay them out, built in a temporary
folder from the embedded GGUF (hard-linked where the file system allows, else copied)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

OLLAMA_NAME = "ollama:smollm2:135m"
LMSTUDIO_NAME = "lmstudio:HuggingFaceTB/SmolLM2-135M-Instruct-GGUF/smollm2-135m-instruct-q4_1.gguf"
HF_GGUF_NAME = "hf:HuggingFaceTB/SmolLM2-135M-Instruct-GGUF/smollm2-135m-instruct-q4_1.gguf"
HF_FOLDER_NAME = "hf:acme/tiny-llama"
TRUNCATED_NAME = "lmstudio:broken/truncated/half.gguf"
HF_COMMIT = "a" * 40


@dataclass(frozen=True)
class Stores:
    home: Path
    ollama: Path
    lmstudio: Path
    hf: Path


def _place(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)


def _digest(path: Path) -> str:
    sha = hashlib.sha256()
    with path.open("rb") as file:
        while chunk := file.read(1 << 20):
            sha.update(chunk)
    return sha.hexdigest()


def build_stores(root: Path, gguf: Path) -> Stores:
    """``root/home`` with all three stores; set ``HOME`` to it (and unset ``OLLAMA_MODELS``,
    ``HF_HOME``, ``HF_HUB_CACHE``, ``XDG_CACHE_HOME``) to use them."""
    home = root / "home"
    # Ollama: a manifest naming the model layer by digest, the blob under blobs/sha256-<hex>.
    ollama = home / ".ollama" / "models"
    digest = _digest(gguf)
    _place(gguf, ollama / "blobs" / f"sha256-{digest}")
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
        "config": {"mediaType": "application/vnd.docker.container.image.v1+json",
                   "digest": "sha256:" + "0" * 64, "size": 412},
        "layers": [
            {"mediaType": "application/vnd.ollama.image.model", "digest": f"sha256:{digest}",
             "size": gguf.stat().st_size},
            {"mediaType": "application/vnd.ollama.image.template",
             "digest": "sha256:" + "1" * 64, "size": 100},
        ],
    }  # fmt: skip
    path = ollama / "manifests" / "registry.ollama.ai" / "library" / "smollm2" / "135m"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(manifest))
    # A manifest whose blob is missing (a pull that never finished) is not listed.
    orphan = ollama / "manifests" / "registry.ollama.ai" / "library" / "gone" / "latest"
    orphan.parent.mkdir(parents=True)
    orphan.write_text(
        json.dumps(
            {
                **manifest,
                "layers": [
                    {
                        **manifest["layers"][0],  # type: ignore[dict-item]
                        "digest": "sha256:" + "f" * 64,
                    }
                ],
            }
        )
    )
    # LM Studio: models/<publisher>/<repo>/<file>.gguf, plus a projector that is not a model and
    # a truncated copy.
    lmstudio = home / ".lmstudio" / "models"
    repo = lmstudio / "HuggingFaceTB" / "SmolLM2-135M-Instruct-GGUF"
    _place(gguf, repo / "smollm2-135m-instruct-q4_1.gguf")
    (repo / "mmproj-smollm2-f16.gguf").write_bytes(b"GGUF\x03\0\0\0")
    broken = lmstudio / "broken" / "truncated" / "half.gguf"
    broken.parent.mkdir(parents=True)
    with gguf.open("rb") as file:
        broken.write_bytes(file.read(200_000))  # the header ends mid-vocabulary
    # Hugging Face cache: snapshots/<commit>/ with symlinks into blobs/, refs/main.
    hf = home / ".cache" / "huggingface" / "hub"
    gguf_repo = hf / "models--HuggingFaceTB--SmolLM2-135M-Instruct-GGUF"
    _place(gguf, gguf_repo / "blobs" / digest)
    _link(gguf_repo, "smollm2-135m-instruct-q4_1.gguf", digest)
    folder_repo = hf / "models--acme--tiny-llama"
    config = {"model_type": "llama", "architectures": ["LlamaForCausalLM"],
              "max_position_embeddings": 2048, "torch_dtype": "float32"}  # fmt: skip
    for name, data in (
        ("config.json", json.dumps(config).encode()),
        ("tokenizer_config.json", json.dumps({"chat_template": "{{ messages }}"}).encode()),
        ("model.safetensors", _safetensors({"w": [4, 8], "b": [8]})),
    ):
        blob = hashlib.sha1(data, usedforsecurity=False).hexdigest()
        (folder_repo / "blobs").mkdir(parents=True, exist_ok=True)
        (folder_repo / "blobs" / blob).write_bytes(data)
        _link(folder_repo, name, blob)
    return Stores(home, ollama, lmstudio, hf)


def _link(repo: Path, name: str, blob: str) -> None:
    snapshot = repo / "snapshots" / HF_COMMIT
    snapshot.mkdir(parents=True, exist_ok=True)
    (snapshot / name).symlink_to(f"../../blobs/{blob}")
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / "main").write_text(HF_COMMIT)


def _safetensors(shapes: dict[str, list[int]]) -> bytes:
    header: dict[str, object] = {}
    offset = 0
    for name, shape in shapes.items():
        size = 4
        for dim in shape:
            size *= dim
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header).encode()
    return len(raw).to_bytes(8, "little") + raw + b"\0" * offset
