"""``--log-file`` (what the Neovim plug-in passes: its cache folder may not exist on a fresh
machine): the server starts and logs there, or, when it cannot write there, to stderr with the
reason, never a traceback instead of a server."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def serve_until_stdin_closes(log_file: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-P", "-m", "server", "serve", "--log-file", str(log_file)],
        input="",
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_a_log_file_in_a_folder_that_does_not_exist_yet_is_created(tmp_path: Path) -> None:
    log_file = tmp_path / "cache" / "nvim" / "gatehouse.log"
    done = serve_until_stdin_closes(log_file)

    assert done.returncode == 0, done.stderr
    assert "serving on stdio" in log_file.read_text(encoding="utf-8")
    assert "Traceback" not in done.stderr


def test_an_unwritable_log_file_falls_back_to_stderr_with_the_reason(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("", encoding="utf-8")
    done = serve_until_stdin_closes(blocker / "gatehouse.log")

    assert done.returncode == 0, done.stderr
    assert "cannot write the log file" in done.stderr and "serving on stdio" in done.stderr
    assert "Traceback" not in done.stderr
