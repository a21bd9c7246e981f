"""``gatehouse acp``: the process. stdout is the ACP transport (newline-delimited JSON-RPC);
logs go to stderr. The options are the ``gatehouse serve`` flags and, per connection, the
``initialize`` request's ``_meta.gatehouse`` (the ACP place for ``initializationOptions``)."""

from __future__ import annotations

import asyncio
import atexit
import gc
import logging
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from engine import __version__
from sandbox import cgroups
from sandbox.policy import SandboxSettings
from sandbox.probe import EarlyProbe, Place, probe
from sandbox.runtime import drop_workspace_imports
from server.options import ServerOptions
from server.service import AgentService, ClientFeatures

logger = logging.getLogger(__name__)


class _NoLspChannel:
    """The LSP requests the service could send (toolConfirm, $/progress): never in ACP mode,
    where approvals go through :class:`server.acp.permissions.AcpPermissions`."""

    def send_request(self, method: str, params: Any = None, *, msg_id: str) -> Any:
        raise ConnectionError(f"{method} cannot be sent in ACP mode")

    def withdraw_request(self, msg_id: str) -> None:
        return None


def build_agent(
    workspace: Path | None,
    flags: dict[str, Any],
    scratch_root: Path,
    early_probe: EarlyProbe | None = None,
) -> Any:
    """The agent of one connection, ready for ``acp.run_agent``."""
    from server.acp.agent import GatehouseAgent  # noqa: PLC0415 - imports the SDK

    service = AgentService(
        _NoLspChannel(),
        None,
        options=ServerOptions(),
        workspace=workspace or Path.cwd(),
        scratch_root=scratch_root,
    )

    @atexit.register
    def _clean_up() -> None:
        shutil.rmtree(scratch_root, ignore_errors=True)
        cgroups.remove_trees(service.sandbox.trees)

    def configure(options: ServerOptions, folder: Path) -> None:
        settings = SandboxSettings(
            network=options.sandbox.network, min_level=options.sandbox.min_level
        )
        drop_workspace_imports(folder)  # nothing imported later may come from there
        if early_probe is not None:
            report = early_probe.report(settings, folder)
        else:
            report = probe(settings, place=Place(folder, scratch_root / "bin"))
        # ACP clients answer session/request_permission: the gate is always wired.
        service.configure(options, folder, ClientFeatures(tool_confirm=True), report.sandbox)
        logger.info("workspace %s, isolation %s", folder, service.sandbox.info.level)

    return GatehouseAgent(service, configure, workspace=workspace, flags=flags)


def serve_acp(
    workspace: Path | None,
    flags: dict[str, Any],
    scratch_root: Path,
    early_probe: EarlyProbe | None = None,
) -> int:
    """Serve ACP over stdio until the client closes it."""
    # stdout is the transport: it moves to a private descriptor, and descriptor 1 (and
    # sys.stdout) become stderr, so a stray print() or a library's write cannot corrupt it.
    transport = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    agent = build_agent(workspace, flags, scratch_root, early_probe)
    logger.info("gatehouse %s speaking ACP on stdio (pid %d)", __version__, os.getpid())
    asyncio.run(_run(agent, transport))
    return 0


async def _run(agent: Any, transport: Any) -> None:
    import acp  # noqa: PLC0415
    from acp.core import DEFAULT_STDIO_BUFFER_LIMIT_BYTES  # noqa: PLC0415

    saved, sys.stdout = sys.stdout, transport  # the SDK connects the pipe sys.stdout names
    try:
        reader, writer = await acp.stdio_streams(limit=DEFAULT_STDIO_BUFFER_LIMIT_BYTES)
    finally:
        sys.stdout = saved
    # The SDK's schema is thousands of long-lived objects: out of the collector's way, they cost
    # nothing per token (with them tracked, per-token CPU was ~6 % above the LSP mode's). The
    # collector, paused for start-up by ``gatehouse``, resumes here.
    gc.freeze()
    gc.enable()
    await acp.run_agent(agent, writer, reader)
