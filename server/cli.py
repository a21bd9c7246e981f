"""The ``gatehouse`` command: ``serve`` (the stdio server) and ``chat`` (the headless harness)."""

from __future__ import annotations

import argparse
import gc
import logging
import sys
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from engine import __version__
from server.options import cli_options


def _existing_dir(value: str) -> Path:
    path = Path(value).expanduser().resolve()
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"not a directory: {value}")
    return path


def add_option_flags(parser: argparse.ArgumentParser) -> None:
    """One flag per option the schema marks as a flag (server.options)."""
    for name, key, info in cli_options():
        flag = "--" + name.replace("_", "-")
        help_text = (info.description or "").split(". ")[0].rstrip(".")
        kind = typing.get_args(info.annotation) or (info.annotation,)
        if info.annotation is bool:
            parser.add_argument(flag, dest=key, action="store_true", default=None, help=help_text)
        elif set(kind) == {bool, type(None)}:  # unset: the default; --no-...: off
            action = argparse.BooleanOptionalAction
            parser.add_argument(flag, dest=key, action=action, default=None, help=help_text)
        elif typing.get_origin(info.annotation) is typing.Literal:
            parser.add_argument(flag, dest=key, choices=kind, help=help_text)
        elif int in kind:
            parser.add_argument(flag, dest=key, type=int, help=help_text)
        else:
            parser.add_argument(flag, dest=key, help=help_text)


def option_flags(args: argparse.Namespace) -> dict[str, Any]:
    """The options given as flags, by wire name."""
    given = {key: getattr(args, key, None) for _name, key, _info in cli_options()}
    return {key: value for key, value in given.items() if value is not None}


def option_argv(args: argparse.Namespace) -> list[str]:
    """The same options as ``gatehouse serve`` flags (what ``gatehouse chat`` passes on)."""
    argv: list[str] = []
    for name, key, _info in cli_options():
        value = getattr(args, key, None)
        flag = "--" + name.replace("_", "-")
        if value is True:
            argv.append(flag)
        elif value is False:
            argv.append("--no-" + flag.removeprefix("--"))
        elif value is not None:
            argv += [flag, str(value)]
    return argv


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gatehouse",
        description="An editor-agnostic coding-agent backend (JSON-RPC over stdio).",
    )
    parser.add_argument("--version", action="version", version=f"gatehouse {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    def engine_flags(p: argparse.ArgumentParser) -> None:
        p.add_argument("--workspace", type=_existing_dir, help="the folder tools work in")
        add_option_flags(p)
        p.add_argument(
            "--log-level",
            choices=["DEBUG", "INFO", "WARNING", "ERROR"],
            help="stderr log level (default: INFO for serve, WARNING for chat)",
        )
        p.add_argument(
            "--log-file",
            help="append the log to this file instead of stderr (editors that show every "
            "stderr line as an error, such as Neovim's lsp.log)",
        )

    serve = sub.add_parser("serve", help="serve JSON-RPC 2.0 over stdio (LSP framing)")
    engine_flags(serve)

    acp = sub.add_parser(
        "acp",
        help="speak the Agent Client Protocol over stdio (Zed, JetBrains, acpx, Toad, ...)",
        description="Speak the Agent Client Protocol over stdio. The workspace is --workspace, "
        "else the first session/new's cwd. Options: these flags, or the initialize request's "
        "_meta.gatehouse object (see docs/acp.md).",
    )
    engine_flags(acp)

    chat = sub.add_parser("chat", help="chat from the terminal through a real server child")
    chat.add_argument("prompt", nargs="?", help="the prompt (none: an interactive REPL)")
    engine_flags(chat)
    chat.add_argument(
        "--approve",
        choices=["ask", "allow", "deny"],
        default="ask",
        help="how to answer approval prompts (ask: on a TTY; without a TTY that means deny)",
    )
    chat.add_argument("--json", action="store_true", help="print every message as a JSON line")
    resume = chat.add_mutually_exclusive_group()
    resume.add_argument(
        "--resume",
        nargs="?",
        const="",
        metavar="ID",
        help="continue a saved session of this workspace (no ID: choose from the list)",
    )
    resume.add_argument(
        "--continue",
        dest="continue_last",
        action="store_true",
        help="continue this workspace's most recent session",
    )
    chat.add_argument(
        "--tools",
        help="comma-separated built-in tools to offer (default: all; models of at most 1B "
        "parameters: terminal)",
    )

    models = sub.add_parser(
        "models",
        help="list the models Gatehouse can load (its own, Ollama's, LM Studio's, the HF cache)",
    )
    models.add_argument("--json", action="store_true", help="machine-readable output")
    models.add_argument("--log-level", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    models_sub = models.add_subparsers(dest="models_command")
    pull = models_sub.add_parser(
        "pull", help="download a model from the Hugging Face Hub into its cache (resumable)"
    )
    pull.add_argument("repo", help="the repository, ORG/NAME")
    pull.add_argument("file", nargs="?", help="the GGUF file (default: the one to use)")
    pull.add_argument("--revision", default="main", help="a branch, tag or commit (default main)")
    pull.add_argument("--log-level", choices=["DEBUG", "INFO", "WARNING", "ERROR"])

    doctor = sub.add_parser("doctor", help="show the isolation approved code gets on this machine")
    doctor.add_argument("--json", action="store_true", help="machine-readable output")
    doctor.add_argument("--network", action="store_true", help="check as with sandbox.network on")
    doctor.add_argument(
        "--workspace",
        type=_existing_dir,
        help="also list the auto-run paths found in this folder (default: the current folder)",
    )
    doctor.add_argument("--log-level", choices=["DEBUG", "INFO", "WARNING", "ERROR"])

    audit = sub.add_parser("audit", help="check or read the audit log (what ran, who allowed it)")
    audit.add_argument("--log-level", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    audit_sub = audit.add_subparsers(dest="audit_command", required=True)
    verify = audit_sub.add_parser(
        "verify", help="check the hash chain: exit 1 naming any record edited, removed or moved"
    )
    verify.add_argument("--json", action="store_true", help="machine-readable output")
    verify.add_argument("--log-level", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    show = audit_sub.add_parser("show", help="print the audit log readably")
    show.add_argument("--session", help="only this session's records")
    show.add_argument("--workspace", type=_existing_dir, help="only this workspace's records")
    show.add_argument("--json", action="store_true", help="one JSON record per line")
    show.add_argument("--log-level", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    return parser


def _serve(args: argparse.Namespace) -> int:
    # With --workspace (gatehouse chat and the VS Code client pass it), the sandbox probe's
    # self-tests (mostly waiting for child processes) run in a thread while the server's imports
    # (mostly lsprotocol) load: a shorter cold start.
    from sandbox.hardening import make_non_dumpable  # noqa: PLC0415
    from sandbox.probe import EarlyProbe, Place  # noqa: PLC0415
    from server.scratch import make_scratch_root, reap_stale_in_background  # noqa: PLC0415

    make_non_dumpable()
    reap_stale_in_background()
    scratch_root = make_scratch_root()
    place = Place(args.workspace, scratch_root / "bin")
    early = EarlyProbe(place) if args.workspace is not None else None
    from server.app import LaunchSettings, serve  # noqa: PLC0415 - only what serving needs

    serve(LaunchSettings(args.workspace, option_flags(args), scratch_root, early))
    return 0


def _acp(args: argparse.Namespace) -> int:
    from sandbox.hardening import make_non_dumpable  # noqa: PLC0415
    from sandbox.probe import EarlyProbe, Place  # noqa: PLC0415
    from server.scratch import make_scratch_root, reap_stale_in_background  # noqa: PLC0415

    make_non_dumpable()
    reap_stale_in_background()
    scratch_root = make_scratch_root()
    early = None
    if args.workspace is not None:
        early = EarlyProbe(Place(args.workspace, scratch_root / "bin"))
    from server.acp.serve import serve_acp  # noqa: PLC0415

    if args.script is not None:
        args.script = str(Path(args.script).expanduser().resolve())
    return serve_acp(args.workspace, option_flags(args), scratch_root, early)


def _log_handler(log_file: str | None) -> tuple[logging.Handler, str | None]:
    """The log's handler: ``--log-file`` (its folder made when missing: an editor's cache folder
    may not exist yet), else stderr; a log file that cannot be written falls back to stderr with
    the reason, instead of the server not starting."""
    if not log_file:
        return logging.StreamHandler(sys.stderr), None
    try:
        Path(log_file).parent.mkdir(parents=True, exist_ok=True)
        return logging.FileHandler(log_file), None
    except OSError as exc:
        return logging.StreamHandler(sys.stderr), f"cannot write the log file {log_file} ({exc})"


def main(argv: Sequence[str] | None = None) -> int:
    # Start-up builds many objects that all live as long as the process (modules, the protocol's
    # models): the cycle collector finds nothing to free in them, yet ran ~7 % of the server's
    # start. It is paused until the server is built (server.app.serve resumes it, after
    # freezing what start-up made) or the command is known not to be a server.
    gc.disable()
    try:
        args = _parser().parse_args(argv)
    except BaseException:
        gc.enable()
        raise
    if args.command not in ("serve", "acp"):
        gc.enable()
    if args.log_level is None:
        # The harness shows a transcript: the server's INFO lines would only clutter it.
        args.log_level = "INFO" if args.command in ("serve", "acp") else "WARNING"
    log_file = getattr(args, "log_file", None)
    handler, unwritable = _log_handler(log_file)
    logging.basicConfig(
        level=getattr(logging, args.log_level),
        handlers=[handler],
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if unwritable:
        logging.getLogger(__name__).warning("%s: logging to stderr instead", unwritable)
    if args.log_level != "DEBUG":
        # pygls logs every message it sends at INFO: noise, and a cost on the hot path.
        logging.getLogger("pygls").setLevel(logging.WARNING)
    if args.command == "serve":
        return _serve(args)
    if args.command == "acp":
        return _acp(args)
    if args.command == "models":
        from server import models_command  # noqa: PLC0415

        if args.models_command == "pull":
            return models_command.pull_command(args.repo, args.file, args.revision)
        return models_command.list_command(args.json)
    if args.command == "doctor":
        from server.doctor import run_doctor  # noqa: PLC0415

        return run_doctor(args.json, args.network, args.workspace)
    if args.command == "audit":
        from server import audit_command  # noqa: PLC0415

        if args.audit_command == "verify":
            return audit_command.verify_command(args.json)
        return audit_command.show_command(args.session, args.workspace, args.json)
    from harness.chat import run_chat  # noqa: PLC0415 - the client does not need the server

    if args.script is not None:  # the server child may run elsewhere: pass an absolute path
        args.script = str(Path(args.script).expanduser().resolve())
    args.server_flags = option_argv(args)
    return run_chat(args)
