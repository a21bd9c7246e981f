"""Every flow of docs/protocol.md, replayed message by message against a real server.

The transcripts (tests/golden/transcripts/*.json) are the exact message sequences, shared with
the VS Code client's contract tests; a protocol change shows as a changed golden file
(re-record with ``python -m tests.golden.flows``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.golden.flows import FLOWS
from tests.golden.transcript import TRANSCRIPTS, replay

FILES = sorted(TRANSCRIPTS.glob("*.json"))


def test_every_flow_has_a_golden_transcript() -> None:
    assert sorted(p.stem for p in FILES) == sorted(f.name for f in FLOWS)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
async def test_the_server_speaks_exactly_the_golden_transcript(path: Path, tmp_path: Path) -> None:
    transcript: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    await replay(transcript, tmp_path)
