"""The Gatehouse language server: one factory that wires the transport, the routes and the service.

Routes are an explicit table (method, params model, handler) rather than decorators scattered over
modules; pydantic validates params and :mod:`server.errors` maps every failure to its JSON-RPC code.
"""

from __future__ import annotations

import asyncio
import atexit
import gc
import inspect
import logging
import os
import shutil
import signal
import sys
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from lsprotocol import types as lsp
from pydantic import BaseModel
from pygls.io_ import StdoutWriter
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from engine import __version__
from sandbox import cgroups
from sandbox.hardening import make_non_dumpable
from sandbox.policy import SandboxSettings
from sandbox.probe import EarlyProbe, Place, probe
from sandbox.runtime import drop_workspace_imports
from server.documents import OpenDocuments
from server.framing import serve_frames
from server.model_methods import ModelMethods
from server.options import ServerOptions, parse_options, settings_section
from server.protocol import (
    AGENT_CANCEL,
    AGENT_CHANGES,
    AGENT_CHAT,
    AGENT_MODELS,
    AGENT_PULL_MODEL,
    AGENT_REWIND,
    AGENT_RULES,
    AGENT_RULES_ADD,
    AGENT_RULES_REMOVE,
    AGENT_SESSION_DELETE,
    AGENT_SESSION_LOAD,
    AGENT_SESSIONS,
    AGENT_STATUS,
    METHODS,
    Method,
    WireModel,
)
from server.scratch import make_scratch_root
from server.service import AgentService, ClientFeatures, Notifier
from server.transport import GatehouseProtocol, make_converter

logger = logging.getLogger(__name__)


STOP_GRACE_SECONDS = 1.5
"""On SIGTERM (or when the client goes away), how long running turns get to end cleanly."""


class GatehouseServer(LanguageServer):
    protocol: GatehouseProtocol
    service: AgentService

    def report_server_error(self, error: Exception, source: Any) -> None:
        # pygls pops a window/showMessage for transport errors; requests are answered by the
        # transport itself, and the details go to the log.
        logger.warning("%s: %s", getattr(source, "__name__", source), error)

    def _start_io_async(
        self, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None
    ) -> None:
        # pygls' reader trusts Content-Length; server.framing reads with a size cap instead.
        self._stop_event = threading.Event()
        self.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))
        try:
            asyncio.run(self._serve(stdin or sys.stdin.buffer))
        except BrokenPipeError:
            logger.error("the connection to the client is lost; shutting down")
        except (KeyboardInterrupt, SystemExit):
            pass
        finally:
            self.shutdown()  # type: ignore[no-untyped-call]

    async def _serve(self, stdin: BinaryIO) -> None:
        """Serve until the end of input, ``exit`` or SIGTERM/SIGHUP; then stop every turn (its
        approvals withdrawn, its processes killed) before returning."""
        main = asyncio.current_task()
        assert main is not None
        loop = asyncio.get_running_loop()
        stopping: list[asyncio.Task[None]] = []

        async def terminate(signum: int) -> None:
            logger.info("signal %d: cancelling every turn, then exiting", signum)
            await self.service.stop_all(STOP_GRACE_SECONDS)
            main.cancel()

        def on_signal(signum: int) -> None:
            if not stopping:
                stopping.append(loop.create_task(terminate(signum)))

        for sig in (signal.SIGTERM, signal.SIGHUP):
            loop.add_signal_handler(sig, on_signal, sig)
        try:
            protocol = self.protocol
            await serve_frames(stdin, protocol.prepare, protocol.receive, protocol.report_oversized)
        except asyncio.CancelledError:
            if not stopping:
                raise
        finally:
            await self.service.stop_all(STOP_GRACE_SECONDS)


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
    """What the client can answer. ``window/showMessageRequest`` is a base LSP request every
    editor handles (the ``window.showMessage`` capability only describes action-item properties,
    and eglot 1.9 does not send it): a client that declares editor capabilities
    (``textDocument`` or ``window``) is asked with it. A client that declares neither is a bare
    harness: it is asked nothing, and a request that could prompt is refused up front."""
    caps = params.capabilities
    experimental = caps.experimental if isinstance(caps.experimental, dict) else {}
    window = caps.window
    return ClientFeatures(
        tool_confirm=experimental.get("toolConfirm") is True,
        show_message_request=window is not None or caps.text_document is not None,
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
        # Like any language server: the editor reports the documents it has open, so that an edit
        # of a file with unsaved changes is refused (server/documents.py).
        text_document_sync_kind=lsp.TextDocumentSyncKind.Incremental,
    )
    protocol = server.protocol
    scratch_root = launch.scratch_root or make_scratch_root()
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
    initial: list[ServerOptions] = [ServerOptions()]
    """The options of ``initializationOptions`` (before the flags): what settings re-read by
    ``workspace/didChangeConfiguration`` apply over."""

    def on_initialize(params: lsp.InitializeParams) -> dict[str, Any]:
        options, found = parse_options(params.initialization_options)
        initial[0] = options
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

    def report_problems() -> None:
        for problem in problems:
            server.window_show_message(
                lsp.ShowMessageParams(lsp.MessageType.Warning, f"Gatehouse settings: {problem}")
            )
        problems.clear()

    protocol.request_methods = frozenset(
        m.name for m in METHODS if m.direction == "client->server" and m.kind == "request"
    )
    _track_documents(server, service.documents)

    @server.feature(lsp.INITIALIZED)
    def initialized(_params: lsp.InitializedParams) -> None:
        report_problems()

    @server.feature(lsp.WORKSPACE_DID_CHANGE_CONFIGURATION)
    def did_change_configuration(params: lsp.DidChangeConfigurationParams) -> None:
        # Settings are re-read and apply from the next request; the flags still win. Sandbox
        # settings decide how approved code is confined: they apply when the server starts.
        section = settings_section(params.settings)
        if section is None:
            logger.info("workspace/didChangeConfiguration without Gatehouse settings: no change")
            return
        options, found = parse_options(section, initial[0])
        options, from_flags = parse_options(launch.options, options)
        problems.extend(found + from_flags)
        if options.sandbox != service.options.sandbox:
            problems.append(
                "sandbox settings apply when the server starts; restart it to change them"
            )
            options = options.model_copy(update={"sandbox": service.options.sandbox})
        service.reconfigure(options)
        logger.info("settings re-read (workspace/didChangeConfiguration)")
        report_problems()

    model_methods = ModelMethods(service)
    memory = _memory_methods(service)
    routes: dict[str, Handler] = {
        AGENT_CHAT: service.chat,
        AGENT_CANCEL: service.cancel,
        AGENT_STATUS: service.status,
        AGENT_MODELS: model_methods.models,
        AGENT_PULL_MODEL: model_methods.pull,
        AGENT_RULES: service.rules.list,
        AGENT_RULES_ADD: service.rules.add,
        AGENT_RULES_REMOVE: service.rules.remove,
        AGENT_SESSIONS: memory("sessions"),
        AGENT_SESSION_LOAD: memory("load"),
        AGENT_SESSION_DELETE: memory("delete"),
        AGENT_CHANGES: memory("changes"),
        AGENT_REWIND: memory("rewind"),
    }
    for method in METHODS:
        if method.direction == "client->server":
            _route(server, method, routes[method.name])
    server.service = service
    return server


def _track_documents(server: LanguageServer, documents: OpenDocuments) -> None:
    """Keep ``documents`` up to date with the editor's ``textDocument/did*`` notifications (pygls
    keeps the text itself)."""

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    def did_open(params: lsp.DidOpenTextDocumentParams) -> None:
        documents.opened(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(params: lsp.DidChangeTextDocumentParams) -> None:
        documents.changed(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    def did_save(params: lsp.DidSaveTextDocumentParams) -> None:
        documents.changed(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(params: lsp.DidCloseTextDocumentParams) -> None:
        documents.closed(params.text_document.uri)

    def text_of(uri: str) -> str | None:
        document = server.workspace.text_documents.get(uri)
        return None if document is None else document.source

    documents.bind(text_of)


def _no_params_as_object(params: Any) -> Any:
    """Absent params, or an empty by-position list (what Lua's ``{}`` encodes to in Neovim),
    are no params."""
    return {} if params is None or params == [] else params


def _memory_methods(service: AgentService) -> Callable[[str], Handler]:
    """Route handlers for the memory methods, which load with the first memory request (not at
    start-up)."""
    loaded: list[Any] = []

    def method(name: str) -> Handler:
        async def call(params: Any) -> Any:
            if not loaded:
                from server.memory_methods import MemoryMethods  # noqa: PLC0415

                loaded.append(MemoryMethods(service))
            return await getattr(loaded[0], name)(params)

        return call

    return method


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
            parsed = params_model.model_validate(_no_params_as_object(params))
            return wire(await handler(parsed))

        server.feature(method.name)(run_async)
    else:

        def run(params: Any) -> dict[str, Any]:
            return wire(handler(params_model.model_validate(_no_params_as_object(params))))

        server.feature(method.name)(run)


def resume_collector() -> None:
    """Start-up is over (``gatehouse`` paused the cycle collector for it): what it made is moved
    out of the collector's way for good, and collection resumes."""
    gc.freeze()
    gc.enable()


def serve(
    launch: LaunchSettings, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None
) -> None:
    """Serve JSON-RPC over stdio until the client says ``exit`` or goes away."""
    transport_out = stdout or sys.stdout.buffer
    # stdout is the transport: a stray print() must not corrupt it.
    sys.stdout = sys.stderr
    make_non_dumpable()
    server = create_server(launch)
    resume_collector()
    logger.info("gatehouse %s serving on stdio (pid %d)", __version__, os.getpid())
    server.start_io(stdin or sys.stdin.buffer, transport_out)
