"""The Gatehouse language server: one factory that wires the transport, the routes and the service.

Routes are an explicit table (method, params model, handler) rather than decorators scattered over
modules; pydantic validates params and :mod:`server.errors` maps every failure to its JSON-RPC code.
"""

from __future__ import annotations

import atexit
import inspect
import json
import logging
import os
import shutil
import sys
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from lsprotocol import types as lsp
from pydantic import BaseModel
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from engine import __version__
from sandbox import cgroups
from sandbox.hardening import make_non_dumpable
from sandbox.policy import SandboxSettings
from sandbox.probe import EarlyProbe, Place, probe
from sandbox.runtime import drop_workspace_imports
from server.memory_methods import MemoryMethods
from server.model_methods import ModelMethods
from server.options import ServerOptions, parse_options
from server.protocol import (
    AGENT_CANCEL,
    AGENT_CHANGES,
    AGENT_CHAT,
    AGENT_MODELS,
    AGENT_PULL_MODEL,
    AGENT_REWIND,
    AGENT_SESSION_DELETE,
    AGENT_SESSION_LOAD,
    AGENT_SESSIONS,
    AGENT_STATUS,
    METHODS,
    Method,
    WireModel,
)
from server.service import AgentService, ClientFeatures, Notifier
from server.transport import GatehouseProtocol, make_converter

logger = logging.getLogger(__name__)


class GatehouseServer(LanguageServer):
    protocol: GatehouseProtocol

    def report_server_error(self, error: Exception, source: Any) -> None:
        # pygls pops a window/showMessage for transport errors; a client gets a JSON-RPC error
        # response instead, and the details go to the log.
        if isinstance(error, json.JSONDecodeError | UnicodeDecodeError):
            self.protocol.report_parse_error(error)
        logger.warning("%s: %s", getattr(source, "__name__", source), error)


@dataclass(frozen=True)
class LaunchSettings:
    """What the command line said; it wins over ``initializationOptions``."""

    workspace: Path | None = None
    options: dict[str, Any] = field(default_factory=dict)
    """Options given as flags (wire names), applied over ``initializationOptions``."""
    scratch_root: Path | None = None
    """The server's private folder (0700): session tmp folders, the copy of bwrap that runs."""
    early_probe: EarlyProbe | None = None
    """The sandbox probe, started with the process (see :class:`sandbox.probe.EarlyProbe`)."""


Handler = Callable[[Any], Awaitable[WireModel] | WireModel]


def _workspace_from(params: lsp.InitializeParams, launch: LaunchSettings) -> Path:
    if launch.workspace is not None:
        return launch.workspace
    uri = None
    if params.workspace_folders:
        uri = params.workspace_folders[0].uri
    elif params.root_uri:
        uri = params.root_uri
    if uri:
        path = to_fs_path(uri)
        if path:
            return Path(path)
    if params.root_path:
        return Path(params.root_path)
    return Path.cwd()


def _client_features(params: lsp.InitializeParams) -> ClientFeatures:
    caps = params.capabilities
    experimental = caps.experimental if isinstance(caps.experimental, dict) else {}
    window = caps.window
    return ClientFeatures(
        tool_confirm=experimental.get("toolConfirm") is True,
        show_message_request=window is not None and window.show_message is not None,
        work_done_progress=window is not None and window.work_done_progress is True,
    )


def create_server(launch: LaunchSettings | None = None) -> GatehouseServer:
    """Build a server ready for ``start_io``. Nothing heavy is imported or loaded here."""
    launch = launch or LaunchSettings()
    server = GatehouseServer(
        "gatehouse",
        __version__,
        protocol_cls=GatehouseProtocol,
        converter_factory=make_converter,
        text_document_sync_kind=lsp.TextDocumentSyncKind.None_,
    )
    protocol = server.protocol
    scratch_root = launch.scratch_root or Path(tempfile.mkdtemp(prefix="gatehouse-"))
    service = AgentService(
        protocol,
        Notifier(protocol),
        options=ServerOptions(),
        workspace=launch.workspace or Path.cwd(),
        scratch_root=scratch_root,
    )

    @atexit.register
    def _clean_up() -> None:
        service.memory.close()
        shutil.rmtree(scratch_root, ignore_errors=True)
        cgroups.remove_trees(service.sandbox.trees)

    problems: list[str] = []

    def on_initialize(params: lsp.InitializeParams) -> dict[str, Any]:
        options, found = parse_options(params.initialization_options)
        options, from_flags = parse_options(launch.options, options)  # flags win
        problems.extend(found + from_flags)
        settings = SandboxSettings(
            network=options.sandbox.network,
            min_level=options.sandbox.min_level,
        )
        workspace = _workspace_from(params, launch)
        drop_workspace_imports(workspace)  # nothing imported later may come from there
        if launch.early_probe is not None:
            report = launch.early_probe.report(settings, workspace)
        else:
            report = probe(settings, place=Place(workspace, scratch_root / "bin"))
        service.configure(options, workspace, _client_features(params), report.sandbox)
        logger.info("initialized: workspace %s, client %s", service.workspace, service.client)
        return {"gatehouse": service.capabilities().wire()}

    protocol.on_initialize = on_initialize

    @server.feature(lsp.INITIALIZED)
    def initialized(_params: lsp.InitializedParams) -> None:
        for problem in problems:
            server.window_show_message(
                lsp.ShowMessageParams(lsp.MessageType.Warning, f"Gatehouse settings: {problem}")
            )
        problems.clear()

    model_methods = ModelMethods(service)
    memory_methods = MemoryMethods(service)
    routes: dict[str, Handler] = {
        AGENT_CHAT: service.chat,
        AGENT_CANCEL: service.cancel,
        AGENT_STATUS: service.status,
        AGENT_MODELS: model_methods.models,
        AGENT_PULL_MODEL: model_methods.pull,
        AGENT_SESSIONS: memory_methods.sessions,
        AGENT_SESSION_LOAD: memory_methods.load,
        AGENT_SESSION_DELETE: memory_methods.delete,
        AGENT_CHANGES: memory_methods.changes,
        AGENT_REWIND: memory_methods.rewind,
    }
    for method in METHODS:
        if method.direction == "client->server":
            _route(server, method, routes[method.name])
    server.service = service  # type: ignore[attr-defined]  # for in-process tests
    return server


def _route(server: LanguageServer, method: Method, handler: Handler) -> None:
    """Register ``handler`` for ``method``: params validated by the method's params model (a
    failure is -32602 naming each field), the result checked against its result model."""
    params_model: type[BaseModel] = method.params
    result_model: type[WireModel] = method.result

    def wire(result: Any) -> dict[str, Any]:
        assert isinstance(result, result_model), f"{method.name} returned {type(result)}"
        return result.wire()

    if inspect.iscoroutinefunction(handler):

        async def run_async(params: Any) -> dict[str, Any]:
            parsed = params_model.model_validate({} if params is None else params)
            return wire(await handler(parsed))

        server.feature(method.name)(run_async)
    else:

        def run(params: Any) -> dict[str, Any]:
            return wire(handler(params_model.model_validate({} if params is None else params)))

        server.feature(method.name)(run)


def serve(
    launch: LaunchSettings, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None
) -> None:
    """Serve JSON-RPC over stdio until the client says ``exit`` or goes away."""
    transport_out = stdout or sys.stdout.buffer
    # stdout is the transport: a stray print() must not corrupt it.
    sys.stdout = sys.stderr
    make_non_dumpable()
    server = create_server(launch)
    logger.info("gatehouse %s serving on stdio (pid %d)", __version__, os.getpid())
    server.start_io(stdin or sys.stdin.buffer, transport_out)
