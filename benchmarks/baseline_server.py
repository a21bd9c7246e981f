"""The baseline: a bare pygls ``LanguageServer`` with no features of its own.

Run as ``python benchmarks/baseline_server.py``, it is what pygls alone costs to start and to
answer ``initialize``: the real alternative to Gatehouse's start-up.

With ``--tokens FILE`` (a JSON list of strings) it also answers ``bench/flood``: one
``agent/stream``-shaped ``content`` notification per token, sent inline as fast as pygls can,
without coalescing, then the response ``{"sent": N}``. That is the raw transport cost per token
that ``stream_throughput.py`` compares Gatehouse against. The tokens are loaded at start-up, so
nothing but sending is inside the measured request.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pygls.lsp.server import LanguageServer

FLOOD = "bench/flood"
STREAM = "agent/stream"


def create_server(tokens: list[str] | None) -> LanguageServer:
    server = LanguageServer("baseline", "0")
    if tokens is not None:
        flood_tokens = tokens

        @server.feature(FLOOD)
        def flood(ls: LanguageServer, _params: Any) -> dict[str, int]:
            notify = ls.protocol.notify
            for token in flood_tokens:
                notify(
                    STREAM,
                    {"sessionId": "s-bench", "turnId": "t-1", "type": "content", "text": token},
                )
            return {"sent": len(flood_tokens)}

    return server


def main() -> None:
    args = argparse.ArgumentParser(description=__doc__)
    args.add_argument("--tokens", type=Path, help="JSON list of tokens: enables bench/flood")
    ns = args.parse_args()
    tokens: list[str] | None = None
    if ns.tokens is not None:
        loaded = json.loads(ns.tokens.read_text(encoding="utf-8"))
        assert isinstance(loaded, list)
        tokens = [str(t) for t in loaded]
    stdout = sys.stdout.buffer
    sys.stdout = sys.stderr  # stdout is the transport
    create_server(tokens).start_io(sys.stdin.buffer, stdout)


if __name__ == "__main__":
    main()
