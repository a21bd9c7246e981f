"""One loaded model, shared by every session; created, loaded and switched on demand.

The service calls :meth:`BackendManager.ensure` only after every check that can reject a request
has passed, so a bad request never evicts a loaded model. Loading reports progress.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from engine.backends.base import Backend, BackendError

if TYPE_CHECKING:  # the model catalog loads with the first chat, not at start-up
    from engine.models import ModelEntry
    from engine.models.defaults import ModelDefaults
from server.errors import InvalidParams, InvalidRequest
from server.options import BACKEND_FIELDS, ServerOptions
from server.protocol import InvalidParamsData, ModelUnavailableData

logger = logging.getLogger(__name__)

Progress = Callable[[str], None]


_defaults_cache: dict[tuple[str, int, float], ModelDefaults] = {}


def model_defaults(options: ServerOptions, entry: ModelEntry) -> ModelDefaults:
    """The per-model defaults (cached per file), unless ``modelDefaults`` is off."""
    from engine.models.defaults import NO_DEFAULTS, defaults_for  # noqa: PLC0415

    if not options.model_defaults:
        return NO_DEFAULTS
    try:
        stat = entry.path.stat()
    except OSError:
        return NO_DEFAULTS
    key = (str(entry.path), stat.st_size, stat.st_mtime)
    if key not in _defaults_cache:
        _defaults_cache[key] = defaults_for(entry)
    return _defaults_cache[key]


def create_backend(options: ServerOptions, model: str | None) -> Backend:
    """A backend for ``model`` (None: the configured one). Cheap: nothing is loaded yet."""
    from engine.backends.scripted import ScriptedBackend, ScriptedTurn  # noqa: PLC0415
    from engine.models import resolve_model  # noqa: PLC0415 - not on the start-up path

    model = model or options.model
    if options.backend == "scripted":
        if options.script is None:
            return ScriptedBackend(list[ScriptedTurn](), model="(no script)")
        return ScriptedBackend.from_file(options.script)
    if options.backend == "openai":
        from engine.backends.openai import OpenAIBackend  # noqa: PLC0415 - optional backend

        if not options.openai.base_url:
            raise BackendError("The openai backend needs openai.baseUrl (e.g. http://host:8000/v1)")
        api_key = os.environ.get(options.openai.api_key_env) if options.openai.api_key_env else None
        return OpenAIBackend(
            base_url=options.openai.base_url,
            model=model or options.openai.model or "default",
            api_key=api_key,
        )
    entry = resolve_model(model)
    if options.backend == "transformers":
        from engine.backends.hf import TransformersBackend  # noqa: PLC0415 - heavy, optional

        return TransformersBackend(str(entry.path), threads=options.threads, model_name=entry.name)
    if entry.kind != "gguf":
        raise BackendError(f"The llama_cpp backend needs a .gguf file; {entry.path} is a folder")
    from engine.backends.llama import LlamaCppBackend  # noqa: PLC0415

    defaults = model_defaults(options, entry)
    grammar = options.tool_grammar
    return LlamaCppBackend(
        Path(entry.path),
        model_name=entry.name,
        threads=options.threads,
        context=options.context_size,
        tool_grammar=defaults.tool_grammar if grammar is None else grammar,
        min_p=defaults.min_p,
    )


class BackendManager:
    def __init__(self, options: ServerOptions) -> None:
        self.options = options
        self.current: Backend | None = None
        self._requested: str | None = None
        self._stale = False
        """The settings the current model was made with have changed: make it again."""
        self._lock = asyncio.Lock()

    def reconfigure(self, options: ServerOptions) -> None:
        """New settings; when one the model was made with changed, the next request makes the
        model again (like a switch: refused while another session is generating)."""
        changed = any(getattr(options, f) != getattr(self.options, f) for f in BACKEND_FIELDS)
        self.options = options
        if changed and self.current is not None:
            self._stale = True

    @property
    def model_name(self) -> str | None:
        return self.current.model if self.current else self.options.model

    def defaults(self, model: str | None) -> ModelDefaults:
        """The defaults of the model a request would use (``model``, else the current one)."""
        from engine.models import resolve_model  # noqa: PLC0415
        from engine.models.defaults import NO_DEFAULTS  # noqa: PLC0415

        if self.options.backend not in ("llama_cpp", "transformers"):
            return NO_DEFAULTS
        wanted = model if model is not None else self._requested or self.options.model
        try:
            entry = resolve_model(wanted)
        except BackendError:
            return NO_DEFAULTS
        return model_defaults(self.options, entry)

    def is_current(self, model: str | None) -> bool:
        """True when ``model`` names what is (or would be) loaded anyway."""
        if self._stale:
            return False
        if model is None or model == self._requested:
            return True
        return self.current is not None and model == self.current.model

    def check_switch(self, model: str | None, busy_elsewhere: bool) -> None:
        """Raise if switching to ``model`` cannot be served now (before anything is touched):
        an unknown or unreadable model, or another session still generating."""
        if self.is_current(model):
            return
        if self.options.backend in ("llama_cpp", "transformers"):
            from engine.models import resolve_model  # noqa: PLC0415 - not on the start-up path

            try:
                resolve_model(model)
            except BackendError as exc:
                raise InvalidParams(
                    f"Invalid params: model: {exc}", InvalidParamsData(fields=["model"])
                ) from None
        if self.current is not None and busy_elsewhere:
            raise InvalidRequest(
                f"Another session is using {self.current.model}; wait for it (or cancel it) "
                f"before switching to {model or 'the model your settings name'}.",
                ModelUnavailableData(reason="busy"),
            )

    async def ensure(self, model: str | None, progress: Progress) -> Backend:
        """The backend for ``model`` (None: keep the current one), loaded."""
        async with self._lock:
            wanted = model if model is not None else self._requested
            if self.current is None or not self.is_current(model):
                try:
                    backend = create_backend(self.options, wanted)
                except BackendError as exc:
                    raise InvalidParams(str(exc), InvalidParamsData(fields=["model"])) from None
                old, self.current, self._requested = self.current, backend, wanted
                self._stale = False
                if old is not None:
                    logger.info("switching model: %s -> %s", old.model, backend.model)
                    await old.close()
                reason = self.defaults(wanted).reason
                if reason:
                    progress(f"Small-model defaults: {reason}")
            backend = self.current
        try:
            await backend.load(progress)
        except BackendError as exc:
            raise InvalidRequest(str(exc), ModelUnavailableData(reason="load_failed")) from None
        return backend

    async def close(self) -> None:
        if self.current is not None:
            await self.current.close()
            self.current = None
