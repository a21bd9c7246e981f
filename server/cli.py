"""The ``gatehouse`` command: ``serve`` (the stdio server) and ``chat`` (the headless harness)."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from engine import __version__


def _existing_dir(value: str) -> Path:
    path = Path(value).expanduser().resolve()
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"not a directory: {value}")
    return path


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gatehouse",
        description="An editor-agnostic coding-agent backend (JSON-RPC over stdio).",
    )
    parser.add_argument("--version", action="version", version=f"gatehouse {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    def engine_flags(p: argparse.ArgumentParser) -> None:
        p.add_argument("--workspace", type=_existing_dir, help="the folder tools work in")
        p.add_argument(
            "--backend",
            choices=["llama_cpp", "transformers", "openai", "scripted"],
            help="the model backend (default llama_cpp, with the embedded model)",
        )
        p.add_argument("--script", help='scripted backend: JSON file {"turns": [...]}')
        p.add_argument(
            "--model", help="a .gguf file, a safetensors folder, or a name from `models`"
        )
        p.add_argument("--threads", type=int, help="CPU threads for local models")
        p.add_argument(
            "--tool-grammar",
            action=argparse.BooleanOptionalAction,
            default=None,
            help="constrain a request's first model turn to a valid tool call "
            "(default: on for models of at most 1B parameters)",
        )
        p.add_argument(
            "--log-level",
            choices=["DEBUG", "INFO", "WARNING", "ERROR"],
            help="stderr log level (default: INFO for serve, WARNING for chat)",
        )

    serve = sub.add_parser("serve", help="serve JSON-RPC 2.0 over stdio (LSP framing)")
    engine_flags(serve)

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
    doctor.add_argument("--log-level", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.log_level is None:
        # The harness shows a transcript: the server's INFO lines would only clutter it.
        args.log_level = "INFO" if args.command == "serve" else "WARNING"
    logging.basicConfig(
        level=getattr(logging, args.log_level),
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if args.log_level != "DEBUG":
        # pygls logs every message it sends at INFO: noise, and a cost on the hot path.
        logging.getLogger("pygls").setLevel(logging.WARNING)
    if args.command == "serve":
        from server.app import LaunchSettings, serve  # noqa: PLC0415 - import only what the subcommand needs

        serve(
            LaunchSettings(
                args.workspace,
                args.backend,
                args.script,
                args.model,
                threads=args.threads,
                tool_grammar=args.tool_grammar,
            )
        )
        return 0
    if args.command == "models":
        from server import models_command  # noqa: PLC0415

        if args.models_command == "pull":
            return models_command.pull_command(args.repo, args.file, args.revision)
        return models_command.list_command(args.json)
    if args.command == "doctor":
        from server.doctor import run_doctor  # noqa: PLC0415

        return run_doctor(args.json, args.network)
    from server.harness import run_chat  # noqa: PLC0415 - the harness does not need the server

    return run_chat(args)
