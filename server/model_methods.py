"""``agent/models`` (the models this machine has) and ``agent/pullModel`` (a download from the
Hugging Face Hub, with ``$/progress``): self-contained, so the protocol schema can fold them in.

Both read disk or network, so they run in a worker thread; the event loop keeps serving. A
``$/cancelRequest`` for a pull stops it after the current chunk, and what was downloaded is kept
for the next pull to continue.
"""

from __future__ import annotations

import asyncio
import threading
from typing import TYPE_CHECKING, Any

from pydantic import Field

from engine.models import list_models, models_folder
from engine.models.metadata import describe
from server.errors import InvalidRequest
from server.progress import WorkDone
from server.protocol import StrictParams

if TYPE_CHECKING:
    from engine.models.pull import PullProgress
    from server.service import AgentService

AGENT_MODELS = "agent/models"
AGENT_PULL_MODEL = "agent/pullModel"


class ModelsParams(StrictParams):
    pass


class PullModelParams(StrictParams):
    repo: str = Field(min_length=3, pattern=r"^[^/\s]+/[^/\s]+$")
    file: str | None = Field(default=None, min_length=1)
    revision: str = Field(default="main", min_length=1)


def models_result(current: str | None) -> dict[str, Any]:
    """Every model with its metadata, and the one loaded (or configured)."""
    infos = [describe(entry) for entry in list_models()]
    return {
        "models": [info.wire() for info in infos],
        "current": current,
        "modelsFolder": str(models_folder()),
    }


class ModelMethods:
    def __init__(self, service: AgentService) -> None:
        self._service = service

    async def models(self, _params: ModelsParams) -> dict[str, Any]:
        current = self._service.models.model_name
        return await asyncio.to_thread(models_result, current)

    async def pull(self, params: PullModelParams) -> dict[str, Any]:
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
            raise InvalidRequest(str(exc), {"reason": "cancelled"}) from None
        except PullError as exc:
            bar.end("Failed")
            message = f"Cannot pull {params.repo}: {exc}"
            raise InvalidRequest(message, {"repo": params.repo}) from None
        bar.end(f"Pulled {result.model_name}")
        return {
            "name": result.model_name,
            "repo": result.repo,
            "revision": result.revision,
            "files": [str(path) for path in result.files],
        }
