"""Tests of the editor integrations with real editors and clients: Debian's Neovim and Emacs
(eglot), and acpx. Each needs its tool; ``make test`` installs them (``scripts/setup-editors.sh``)
and sets ``GATEHOUSE_REQUIRE_EDITORS=1``, so a missing tool fails there instead of skipping."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def require_tool(name: str, how: str, path: str | None = None) -> str:
    """The tool's path; a skip (a failure under GATEHOUSE_REQUIRE_EDITORS=1) when it is absent."""
    found = path if path and os.access(path, os.X_OK) else shutil.which(name)
    if found:
        return found
    message = f"{name} is not installed ({how}; `make test` installs it)"
    if os.environ.get("GATEHOUSE_REQUIRE_EDITORS") == "1":
        pytest.fail(message)
    pytest.skip(message)
