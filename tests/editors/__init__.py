"""Tests of the editor integrations with real editors and clients: Debian's Neovim and Emacs
(eglot), and acpx. Each needs its tool; ``make test`` installs them (``scripts/setup-editors.sh``)
and sets ``GATEHOUSE_REQUIRE_EDITORS=1``, so a missing tool fails there instead of skipping."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("GATEHOUSE_EDITORS_CACHE", Path.home() / ".cache/gatehouse-editors"))
"""Where scripts/setup-editors.sh keeps Node 22, acpx and the current Neovim."""


def require_tool(name: str, how: str, path: str | None = None) -> str:
    """The tool's path; a skip (a failure under GATEHOUSE_REQUIRE_EDITORS=1) when it is absent."""
    found = path if path and os.access(path, os.X_OK) else shutil.which(name)
    if found:
        return found
    message = f"{name} is not installed ({how}; `make test` installs it)"
    if os.environ.get("GATEHOUSE_REQUIRE_EDITORS") == "1":
        pytest.fail(message)
    pytest.skip(message)


EDITORS_DOC = REPO / "docs" / "editors.md"


def docs_block(section: str, lang: str, index: int = 0) -> str:
    """The ``index``-th ``lang`` code block of docs/editors.md's ``## section``, verbatim."""
    text = EDITORS_DOC.read_text(encoding="utf-8")
    body = text.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    return body.split(f"```{lang}\n")[index + 1].split("```", 1)[0]


def docs_home(tmp_path: Path, turns: list[object]) -> Path:
    """A new user's home where docs/editors.md's paths hold: ``~/gatehouse`` is this repository's
    editors/ beside a ``.venv/bin/gatehouse`` that runs this repository's server with a scripted
    model answering ``turns`` (the only change from a real install: no real model)."""
    home = tmp_path / "home"
    bin_dir = home / "gatehouse" / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (home / "gatehouse" / "editors").symlink_to(REPO / "editors")
    (home / "project").mkdir()
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": turns}), encoding="utf-8")
    gatehouse = bin_dir / "gatehouse"
    gatehouse.write_text(
        "#!/bin/sh\n"
        f"export PYTHONPATH={shlex.quote(str(REPO))}\n"
        f'exec {shlex.quote(sys.executable)} -P -m server "$@" --backend scripted '
        f"--script {shlex.quote(str(script))}\n",
        encoding="utf-8",
    )
    gatehouse.chmod(0o755)
    return home


def home_env(home: Path) -> dict[str, str]:
    """The environment of a user whose home is ``home``: XDG folders from it, not from ours."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("XDG_")}
    env.pop("PYTHONPATH", None)
    return {**env, "HOME": str(home)}
