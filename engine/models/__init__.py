"""Models on this machine: where they are (:mod:`.catalog`, :mod:`.stores`), what their files say
about them (:mod:`.metadata`, :mod:`.gguf`), the settings each gets by default (:mod:`.defaults`)
and fetching one from the Hugging Face Hub (:mod:`.pull`, which imports ``huggingface_hub`` only
when it runs).

Importing this package is cheap (the wire protocol imports :mod:`.entry` for its literals): the
catalog loads on first use of one of its names.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from engine.models.entry import ModelEntry, ModelKind, ModelSource, kind_of

if TYPE_CHECKING:
    from engine.models.catalog import (
        EMBEDDED_FILE,
        EMBEDDED_NAME,
        EMBEDDED_PACKAGE,
        check_gguf,
        embedded_model,
        list_models,
        models_folder,
        resolve_model,
    )

_FROM_CATALOG = frozenset(
    {
        "EMBEDDED_FILE",
        "EMBEDDED_NAME",
        "EMBEDDED_PACKAGE",
        "check_gguf",
        "embedded_model",
        "list_models",
        "models_folder",
        "resolve_model",
    }
)


def __getattr__(name: str) -> Any:
    if name in _FROM_CATALOG:
        return getattr(importlib.import_module("engine.models.catalog"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "EMBEDDED_FILE",
    "EMBEDDED_NAME",
    "EMBEDDED_PACKAGE",
    "ModelEntry",
    "ModelKind",
    "ModelSource",
    "check_gguf",
    "embedded_model",
    "kind_of",
    "list_models",
    "models_folder",
    "resolve_model",
]
