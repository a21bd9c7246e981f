"""Models on this machine: where they are (:mod:`.catalog`, :mod:`.stores`), what their files say
about them (:mod:`.metadata`, :mod:`.gguf`), the settings each gets by default (:mod:`.defaults`)
and fetching one from the Hugging Face Hub (:mod:`.pull`, which imports ``huggingface_hub`` only
when it runs)."""

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
from engine.models.entry import ModelEntry, ModelKind, ModelSource, kind_of

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
