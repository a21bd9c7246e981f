"""What ``agent/models`` (the models this machine has) and ``agent/pullModel`` (a download from
the Hugging Face Hub, with ``$/progress``) do; their messages are in
:mod:`server.protocol.model_list`.

Both read disk or network, so they run in a worker thread; the event loop keeps serving. A
``$/cancelRequest`` for a pull stops it after the current chunk, and what was downloaded is kept
for the next pull to continue.
"""

from __future__ import annotations

import asyncio
import threading
from typing import TYPE_CHECKING

from server.errors import InvalidRequest
from server.progress import WorkDone
from server.protocol import (
    ModelDescription,
    ModelsParams,
    ModelsResult,
    PullCancelledData,
    PullFailedData,
    PullModelParams,
    PullModelResult,
)

if TYPE_CHECKING:
    from engine.models.metadata import ModelInfo
    from engine.models.pull import PullProgress
    from server.service import AgentService


def description(info: ModelInfo) -> ModelDescription:
    """The wire form of what a model's files say (also ``gatehouse models --json``)."""
    e = info.entry
    return ModelDescription(
        name=e.name,
        source=e.source,
        kind=e.kind,
        path=str(e.path),
        size_bytes=info.size_bytes,
        architecture=info.architecture,
        display_name=info.display_name,
        parameters=info.parameters,
        quantization=info.quantization,
        context_length=info.context_length,
        chat_template=info.chat_template,
        error=info.error,
    )


def models_result(current: str | None) -> ModelsResult:
    """Every model with its metadata, and the one loaded (or configured)."""
    from engine.models import list_models, models_folder  # noqa: PLC0415
    from engine.models.metadata import describe  # noqa: PLC0415

    return ModelsResult(
        models=[description(describe(entry)) for entry in list_models()],
        current=current,
        models_folder=str(models_folder()),
    )


class ModelMethods:
    def __init__(self, service: AgentService) -> None:
        self._service = service

    async def models(self, _params: ModelsParams) -> ModelsResult:
        current = self._service.models.model_name
        return await asyncio.to_thread(models_result, current)

    async def pull(self, params: PullModelParams) -> PullModelResult:
        from engine.models.pull import PullCancelled, PullError, pull  # noqa: PLC0415

        service = self._service
        bar = WorkDone(service.channel, service.client.work_done_progress, "Gatehouse: pull")
        await bar.begin(f"Downloading {params.repo}…")
        loop = asyncio.get_running_loop()
        cancel = threading.Event()
        last = [-1]

        def progress(p: PullProgress) -> None:  # in the worker thread
            percent = int(100 * p.done_bytes / p.total_bytes) if p.total_bytes else None
            if p.stage == "download" and percent == last[0]:
                return
            last[0] = percent if percent is not None else last[0]
            text = f"{p.file}: {p.stage} {p.done_bytes // 1_000_000} MB" + (
                f" ({percent} %)" if percent is not None else ""
            )
            loop.call_soon_threadsafe(bar.report, text, percent)

        work = asyncio.ensure_future(
            asyncio.to_thread(
                pull,
                params.repo,
                params.file,
                revision=params.revision,
                progress=progress,
                cancel=cancel,
            )
        )
        try:
            result = await asyncio.shield(work)
        except asyncio.CancelledError:
            cancel.set()  # the worker stops after its current chunk; the partial file stays
            await asyncio.gather(work, return_exceptions=True)
            bar.end("Cancelled")
            raise
        except PullCancelled as exc:
            bar.end("Cancelled")
            raise InvalidRequest(str(exc), PullCancelledData()) from None
        except PullError as exc:
            bar.end("Failed")
            message = f"Cannot pull {params.repo}: {exc}"
            raise InvalidRequest(message, PullFailedData(repo=params.repo)) from None
        bar.end(f"Pulled {result.model_name}")
        return PullModelResult(
            name=result.model_name,
            repo=result.repo,
            revision=result.revision,
            files=[str(path) for path in result.files],
        )
