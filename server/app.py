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
from dataclasses import dataclass, replace
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
from sandbox.probe import probe
from server.model_methods import (
    AGENT_MODELS,
    AGENT_PULL_MODEL,
    ModelMethods,
    ModelsParams,
    PullModelParams,
)
from server.options import ServerOptions, parse_options
from server.protocol import (
    AGENT_CANCEL,
    AGENT_CHAT,
    AGENT_STATUS,
    CancelParams,
    ChatParams,
    StatusParams,
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
    backend: str | None = None
    script: str | None = None
    model: str | None = None
    threads: int | None = None
    tool_grammar: bool | None = None


Handler = Callable[[Any], Awaitable[dict[str, Any]] | dict[str, Any]]


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
    scratch_root = Path(tempfile.mkdtemp(prefix="gatehouse-"))
    service = AgentService(
        protocol,
        Notifier(protocol),
        options=ServerOptions(),
        workspace=launch.workspace or Path.cwd(),
        scratch_root=scratch_root,
    )

    @atexit.register
    def _clean_up() -> None:
        shutil.rmtree(scratch_root, ignore_errors=True)
        cgroups.remove_trees(service.sandbox.trees)

    problems: list[str] = []

    def on_initialize(params: lsp.InitializeParams) -> dict[str, Any]:
        options, found = parse_options(params.initialization_options)
        options = replace(
            options,
            backend=launch.backend or options.backend,
            script=launch.script or options.script,
            model=launch.model or options.model,
            threads=launch.threads or options.threads,
            tool_grammar=options.tool_grammar
            if launch.tool_grammar is None
            else launch.tool_grammar,
        )
        problems.extend(found)
        settings = SandboxSettings(
            network=options.sandbox_network,
            min_level=options.sandbox_min_level,  # type: ignore[arg-type]  # checked by options
        )
        report = probe(settings)
        service.configure(
            options, _workspace_from(params, launch), _client_features(params), report.sandbox
        )
        logger.info("initialized: workspace %s, client %s", service.workspace, service.client)
        return {"gatehouse": service.capabilities()}

    protocol.on_initialize = on_initialize

    @server.feature(lsp.INITIALIZED)
    def initialized(_params: lsp.InitializedParams) -> None:
        for problem in problems:
            server.window_show_message(
                lsp.ShowMessageParams(lsp.MessageType.Warning, f"Gatehouse settings: {problem}")
            )
        problems.clear()

    def route(method: str, model: type[BaseModel], handler: Handler) -> None:
        if _is_async(handler):

            async def run_async(params: Any) -> dict[str, Any]:
                parsed = model.model_validate({} if params is None else params)
                result = handler(parsed)
                assert not isinstance(result, dict)
                return await result

            server.feature(method)(run_async)
        else:

            def run(params: Any) -> dict[str, Any]:
                parsed = model.model_validate({} if params is None else params)
                result = handler(parsed)
                assert isinstance(result, dict)
                return result

            server.feature(method)(run)

    route(AGENT_CHAT, ChatParams, service.chat)
    route(AGENT_CANCEL, CancelParams, service.cancel)
    route(AGENT_STATUS, StatusParams, lambda _params: service.status())
    model_methods = ModelMethods(service)
    route(AGENT_MODELS, ModelsParams, model_methods.models)
    route(AGENT_PULL_MODEL, PullModelParams, model_methods.pull)
    server.service = service  # type: ignore[attr-defined]  # for in-process tests
    return server


def _is_async(handler: Handler) -> bool:
    return inspect.iscoroutinefunction(handler)


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
