"""Models other tools downloaded: Ollama's store, LM Studio's folder, the Hugging Face cache.

Only folders are walked and small JSON manifests read; model files are not opened here (their
metadata is :mod:`engine.models.metadata`'s job). Each store's location follows the tool's own
settings:

* Ollama: ``$OLLAMA_MODELS``, else ``~/.ollama/models`` and the Linux service's
  ``/usr/share/ollama/.ollama/models``. ``manifests/<registry>/<namespace>/<model>/<tag>`` is a
  JSON manifest whose ``application/vnd.ollama.image.model`` layer names the GGUF blob
  ``blobs/sha256-<hex>``. Names: ``ollama:qwen2.5:0.5b``, ``ollama:user/model:tag``,
  ``ollama:hf.co/org/repo:Q4_K_M``.
* LM Studio: ``~/.lmstudio/models/<publisher>/<repo>/*.gguf`` and the older
  ``~/.cache/lm-studio/models``. Names: ``lmstudio:<publisher>/<repo>/<file>.gguf``.
* Hugging Face: ``$HF_HUB_CACHE``, else ``$HF_HOME/hub``, else ``~/.cache/huggingface/hub``
  (``$XDG_CACHE_HOME`` honoured); ``models--<org>--<name>/snapshots/<revision>/`` holds symlinks
  into ``blobs/``. The revision ``refs/main`` points to is used (else the newest snapshot).
  GGUF files are ``hf:<org>/<name>/<file>.gguf``; a safetensors folder is ``hf:<org>/<name>``.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator
from pathlib import Path

from engine.models.entry import ModelEntry, is_gguf_name, is_listed_gguf, kind_of

logger = logging.getLogger(__name__)

OLLAMA_MODEL_LAYER = "application/vnd.ollama.image.model"
OLLAMA_LIBRARY = ("registry.ollama.ai", "library")
MAX_MANIFEST_BYTES = 1_000_000


def _home() -> Path:
    return Path(os.environ.get("HOME") or Path.home())


# --- Ollama --------------------------------------------------------------------------------------


def ollama_roots() -> list[Path]:
    configured = os.environ.get("OLLAMA_MODELS")
    if configured:
        return [Path(configured).expanduser()]
    return [_home() / ".ollama" / "models", Path("/usr/share/ollama/.ollama/models")]


def ollama_name(manifest: Path, manifests: Path) -> str | None:
    """``qwen2.5:0.5b`` for ``manifests/registry.ollama.ai/library/qwen2.5/0.5b``."""
    parts = manifest.relative_to(manifests).parts
    if len(parts) < 3:
        return None
    *repo, model, tag = parts
    if tuple(repo) == OLLAMA_LIBRARY:
        return f"{model}:{tag}"
    if repo and repo[0] == OLLAMA_LIBRARY[0]:
        repo = repo[1:]
    return "/".join([*repo, model]) + f":{tag}"


def ollama_blob(manifest: Path, blobs: Path) -> Path | None:
    """The GGUF blob a manifest names, if it is on disk."""
    try:
        if manifest.stat().st_size > MAX_MANIFEST_BYTES:
            return None
        data = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        logger.debug("skipping Ollama manifest %s: %s", manifest, exc)
        return None
    layers = data.get("layers") if isinstance(data, dict) else None
    for layer in layers if isinstance(layers, list) else []:
        if not isinstance(layer, dict) or layer.get("mediaType") != OLLAMA_MODEL_LAYER:
            continue
        digest = layer.get("digest")
        if not isinstance(digest, str) or ":" not in digest:
            return None
        algorithm, _, hexdigest = digest.partition(":")
        for candidate in (f"{algorithm}-{hexdigest}", digest):  # the colon form is older
            blob = blobs / candidate
            if blob.is_file():
                return blob
        return None
    return None


def ollama_models() -> list[ModelEntry]:
    found: dict[str, ModelEntry] = {}
    for root in ollama_roots():
        manifests = root / "manifests"
        if not manifests.is_dir():
            continue
        for manifest in sorted(_files(manifests)):
            name = ollama_name(manifest, manifests)
            blob = ollama_blob(manifest, root / "blobs") if name else None
            if name and blob and f"ollama:{name}" not in found:
                found[f"ollama:{name}"] = ModelEntry(f"ollama:{name}", blob, "gguf", "ollama")
    return list(found.values())


# --- LM Studio -----------------------------------------------------------------------------------


def lmstudio_roots() -> list[Path]:
    home = _home()
    return [home / ".lmstudio" / "models", home / ".cache" / "lm-studio" / "models"]


def lmstudio_models() -> list[ModelEntry]:
    found: dict[str, ModelEntry] = {}
    for root in lmstudio_roots():
        if not root.is_dir():
            continue
        for path in sorted(_files(root)):
            relative = path.relative_to(root)
            if len(relative.parts) < 3 or not is_gguf_name(path) or not is_listed_gguf(path):
                continue
            name = "lmstudio:" + relative.as_posix()
            found.setdefault(name, ModelEntry(name, path, "gguf", "lmstudio"))
    return list(found.values())


# --- the Hugging Face cache ----------------------------------------------------------------------


def hf_cache_root() -> Path:
    configured = os.environ.get("HF_HUB_CACHE") or os.environ.get("HUGGINGFACE_HUB_CACHE")
    if configured:
        return Path(configured).expanduser()
    hf_home = os.environ.get("HF_HOME")
    if hf_home:
        return Path(hf_home).expanduser() / "hub"
    cache = os.environ.get("XDG_CACHE_HOME") or str(_home() / ".cache")
    return Path(cache).expanduser() / "huggingface" / "hub"


def hf_snapshot(repo_dir: Path) -> Path | None:
    """The snapshot ``refs/main`` points to, else the newest one."""
    snapshots = repo_dir / "snapshots"
    try:
        commit = (repo_dir / "refs" / "main").read_text(encoding="ascii").strip()
    except (OSError, UnicodeError):
        commit = ""
    if commit and (snapshots / commit).is_dir():
        return snapshots / commit
    try:
        candidates = [p for p in snapshots.iterdir() if p.is_dir()]
    except OSError:
        return None
    return max(candidates, key=lambda p: p.stat().st_mtime, default=None)


def hf_repo_id(repo_dir: Path) -> str | None:
    """``org/name`` for ``models--org--name``."""
    if not repo_dir.name.startswith("models--"):
        return None
    return repo_dir.name.removeprefix("models--").replace("--", "/", 1)


def hf_models() -> list[ModelEntry]:
    root = hf_cache_root()
    if not root.is_dir():
        return []
    found: list[ModelEntry] = []
    for repo_dir in sorted(root.glob("models--*")):
        repo = hf_repo_id(repo_dir)
        snapshot = hf_snapshot(repo_dir) if repo else None
        if repo is None or snapshot is None:
            continue
        folders: set[Path] = set()
        for path in sorted(_files(snapshot)):
            if not path.exists():
                continue  # a symlink to a blob still downloading (or deleted)
            if is_gguf_name(path) and is_listed_gguf(path):
                name = f"hf:{repo}/{path.relative_to(snapshot).as_posix()}"
                found.append(ModelEntry(name, path, "gguf", "hf"))
            elif path.suffix == ".safetensors":
                folders.add(path.parent)
        for folder in sorted(folders):
            if kind_of(folder) == "safetensors" and _complete(folder):
                inner = folder.relative_to(snapshot).as_posix()
                name = f"hf:{repo}" + ("" if inner == "." else f"/{inner}")
                found.append(ModelEntry(name, folder, "safetensors", "hf"))
    return found


def _complete(folder: Path) -> bool:
    """Every shard a sharded folder's index names is on disk."""
    index = folder / "model.safetensors.index.json"
    if not index.is_file():
        return True
    try:
        files = set(json.loads(index.read_text(encoding="utf-8"))["weight_map"].values())
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False
    return all((folder / str(name)).exists() for name in files)


def _files(root: Path) -> Iterator[Path]:
    """Every file under ``root`` (symlinks included, even broken ones); unreadable folders are
    skipped."""
    for folder, _dirs, names in os.walk(root, onerror=lambda exc: None):
        for name in names:
            yield Path(folder) / name


def store_models() -> list[ModelEntry]:
    """Every model found in the three stores."""
    return [*ollama_models(), *lmstudio_models(), *hf_models()]
