"""The workspace opened by descriptor (``engine/workspace_fs.py``): resolution, writes, walks,
and the swap race that path-based checks lose (issue 8, finding 3)."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.tools.base import ToolError
from engine.tools.files import _list_files, _read_file
from engine.tools.search import Matcher, search_files
from engine.tools.textfiles import SKIPPED_DIRS
from engine.workspace_fs import WorkspaceFS, walk_files

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX descriptors and symlinks")

SECRET = "ghsecret-8d0e7a"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "main.py").write_text("print('hi')\n")
    (root / "src" / "pkg" / "util.py").write_text("X = 1\n")
    (root / "README.md").write_text("# readme\n")
    return root


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    out = tmp_path / "home" / ".ssh"
    out.mkdir(parents=True)
    (out / "id_rsa").write_text(f"-----BEGIN KEY-----\n{SECRET}\n")
    return out


def test_links_inside_resolve_and_links_outside_are_refused(ws: Path, outside: Path) -> None:
    (ws / "alias").symlink_to("src")  # relative, inside
    (ws / "abs_alias").symlink_to(ws / "src")  # absolute, inside
    (ws / "src" / "up").symlink_to("../README.md")
    (ws / "out").symlink_to(outside)
    (ws / "sneaky").symlink_to("src/../../home")  # relative, but leads outside
    (ws / "loop").symlink_to("loop")
    with WorkspaceFS(ws) as fs:
        assert fs.resolve("alias/main.py") == ("src", "main.py")
        assert fs.resolve("abs_alias/pkg/util.py") == ("src", "pkg", "util.py")
        assert fs.resolve("src/up") == ("README.md",)
        assert fs.resolve("src/pkg/../main.py") == ("src", "main.py")
        for path in ("out/id_rsa", "sneaky/.ssh/id_rsa", "out"):
            with pytest.raises(ToolError, match="symbolic link that points outside"):
                fs.resolve(path)
        with pytest.raises(ToolError, match="outside the workspace"):
            fs.resolve("src/../../home")
        with pytest.raises(ToolError, match="Too many levels"):
            fs.resolve("loop")
        with pytest.raises(ToolError, match="No such file"):
            fs.resolve("src/nope/x.py")
        assert fs.resolve("src/new.py", must_exist=False) == ("src", "new.py")


def test_open_parent_gives_the_folder_descriptor_for_an_atomic_write(
    ws: Path, outside: Path
) -> None:
    (ws / "out").symlink_to(outside)
    with WorkspaceFS(ws) as fs:
        folder, name = fs.open_parent("src/pkg/new.py")
        try:
            assert folder.parts == ("src", "pkg") and name == "new.py"
            fd = os.open(
                ".new.py.tmp", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644, dir_fd=folder.fd
            )
            os.write(fd, b"Y = 2\n")
            os.fsync(fd)
            os.close(fd)
            os.rename(".new.py.tmp", name, src_dir_fd=folder.fd, dst_dir_fd=folder.fd)
        finally:
            os.close(folder.fd)
        with pytest.raises(ToolError, match="outside"):
            fs.open_parent("out/authorized_keys")
        # the final name is not followed: a rename replaces a link there, never writes through
        (ws / "src" / "pkg" / "link").symlink_to(outside / "id_rsa")
        folder, name = fs.open_parent("src/pkg/link")
        os.close(folder.fd)
        assert name == "link"
    assert (ws / "src" / "pkg" / "new.py").read_text() == "Y = 2\n"


def test_walk_files_order_skips_and_links(ws: Path, outside: Path) -> None:
    (ws / "node_modules").mkdir()
    (ws / "node_modules" / "x.js").write_text("x")
    (ws / "src" / "b.py").write_text("b")
    (ws / "src" / "linked").symlink_to(outside)
    (ws / "src" / "file_link").symlink_to(ws / "README.md")
    with WorkspaceFS(ws) as fs:
        top = fs.open_dir(None)
        try:
            shown = [s for _fd, _name, s in walk_files(top, SKIPPED_DIRS)]
        finally:
            os.close(top.fd)
    assert shown == ["README.md", "src/b.py", "src/main.py", "src/pkg/util.py"]


@pytest.fixture
def swapping(ws: Path, outside: Path) -> Iterator[dict[str, int]]:
    """Approved code in another session: rename ``ws/a`` away, plant ``a -> ~/.ssh``, hold it a
    moment, put the folder back; over and over, until the test ends."""
    real = ws / "a"
    real.mkdir()
    (real / "id_rsa").write_text("an ordinary file\n")
    (real / "notes.txt").write_text("nothing\n")
    stop = threading.Event()
    stats = {"swaps": 0}

    def swap() -> None:
        while not stop.is_set():
            os.rename(real, ws / "a_real")
            os.symlink(outside, real)
            time.sleep(0.0002)
            os.unlink(real)
            os.rename(ws / "a_real", real)
            stats["swaps"] += 1

    thread = threading.Thread(target=swap, daemon=True)
    thread.start()
    yield stats
    stop.set()
    thread.join()


def test_a_folder_swapped_for_a_link_mid_walk_never_leads_outside(
    ws: Path, swapping: dict[str, int]
) -> None:
    """Thousands of searches, reads and listings while the swap runs: never a byte from outside
    (path-based checks leaked the key within a few hundred iterations)."""
    seen_inside = 0
    for i in range(3000):
        pattern = r"^[a-z]+-[0-9a-f]{6}$|ordinary"  # the secret line, or the file inside
        matcher = Matcher.compile(pattern, time.monotonic() + 30, threading.Event())
        try:
            text = search_files(ws, matcher, pattern, None if i % 2 else "a")
        except ToolError as exc:  # "a" is gone, or a link, at that instant
            text = str(exc)
        assert SECRET not in text, text
        seen_inside += "ordinary" in text
        for call in (lambda: _read_file(ws, "a/id_rsa"), lambda: _list_files(ws, "a")):
            try:
                out = call()
            except ToolError as exc:
                out = str(exc)
            assert SECRET not in out and "BEGIN" not in out, out
    assert swapping["swaps"] > 100, swapping
    assert seen_inside > 0  # the searches did see the real folder
