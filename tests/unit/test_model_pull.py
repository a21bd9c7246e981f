"""``gatehouse models pull`` against a Hub stand-in on 127.0.0.1 (``HF_ENDPOINT``), never the
internet: the file lands in the Hugging Face cache layout, an interrupted download continues with
a ``Range`` request, a checksum mismatch is refused, and no network is a one-line error."""

from __future__ import annotations

import os
import socket
import struct
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.models import list_models, resolve_model
from engine.models.pull import PullCancelled, PullError, PullProgress, pick_files, pull
from server.cli import main
from tests.fake_hub import COMMIT, FakeHub, serve

pytest.importorskip("huggingface_hub")

REPO = "acme/tiny-chat-GGUF"
GGUF = "tiny-chat.Q4_K_M.gguf"
PAYLOAD = b"GGUF" + struct.pack("<IQQ", 3, 0, 0) + os.urandom(100_000)  # a header, then bytes


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHub]:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    fake = FakeHub(repos={REPO: {GGUF: PAYLOAD, "README.md": b"# tiny\n", "config.json": b"{}"}})
    with serve(fake) as running:
        monkeypatch.setenv("HF_ENDPOINT", running.url)
        yield running


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """huggingface_hub writes 10 MB at a time; 16 KB lets a 100 KB file stop half-way."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "DOWNLOAD_CHUNK_SIZE", 16_384)


def test_a_pulled_gguf_lands_in_the_hf_cache_and_is_listed(hub: FakeHub, tmp_path: Path) -> None:
    seen: list[PullProgress] = []
    result = pull(REPO, GGUF, progress=seen.append)
    snapshot = tmp_path / "hub" / "models--acme--tiny-chat-GGUF" / "snapshots" / COMMIT
    assert result.files == [snapshot / GGUF]
    assert (snapshot / GGUF).is_symlink() and (snapshot / GGUF).read_bytes() == PAYLOAD
    assert (
        tmp_path / "hub" / "models--acme--tiny-chat-GGUF" / "refs" / "main"
    ).read_text() == COMMIT
    assert result.model_name == f"hf:{REPO}/{GGUF}"
    assert [p.stage for p in seen][-2:] == ["verify", "done"]
    assert seen[-1].done_bytes == len(PAYLOAD)
    assert result.model_name in [m.name for m in list_models()]
    assert resolve_model(result.model_name).path == snapshot / GGUF
    # Pulling again downloads nothing.
    before = len(hub.gets(GGUF))
    pull(REPO, GGUF)
    assert len(hub.gets(GGUF)) == before


def test_without_a_file_the_one_gguf_is_chosen(hub: FakeHub) -> None:
    assert pull(REPO).model_name == f"hf:{REPO}/{GGUF}"


def test_an_interrupted_pull_continues_where_it_stopped(hub: FakeHub, small_chunks: None) -> None:
    cancel = threading.Event()

    def stop_half_way(p: PullProgress) -> None:
        if p.stage == "download" and p.done_bytes >= 40_000:
            cancel.set()

    with pytest.raises(PullCancelled, match="run the pull again"):
        pull(REPO, GGUF, progress=stop_half_way, cancel=cancel)
    partial = next((Path(os.environ["HF_HUB_CACHE"])).rglob("*.incomplete"))
    kept = partial.stat().st_size
    assert 40_000 <= kept < len(PAYLOAD)

    result = pull(REPO, GGUF)
    assert result.files[0].read_bytes() == PAYLOAD
    assert hub.gets(GGUF)[-1] == f"bytes={kept}-"  # only the rest was asked for
    assert not partial.exists()


def test_a_dropped_connection_is_resumed_within_the_pull(hub: FakeHub, small_chunks: None) -> None:
    hub.drop_after[GGUF] = 50_000
    result = pull(REPO, GGUF)
    assert result.files[0].read_bytes() == PAYLOAD
    ranges = hub.gets(GGUF)
    assert ranges[0] is None and ranges[-1] is not None and ranges[-1].startswith("bytes=")


def test_a_checksum_mismatch_is_refused_and_nothing_is_kept(hub: FakeHub, tmp_path: Path) -> None:
    hub.corrupt.add(GGUF)
    with pytest.raises(PullError, match=r"checksum mismatch.*discarded"):
        pull(REPO, GGUF)
    storage = tmp_path / "hub" / "models--acme--tiny-chat-GGUF"
    assert not list(storage.rglob("*.gguf")) and not list(storage.rglob("*.incomplete"))
    assert not [p for p in (storage / "blobs").iterdir()]
    assert f"hf:{REPO}/{GGUF}" not in [m.name for m in list_models()]


def test_unknown_repositories_and_files_are_one_line_errors(hub: FakeHub) -> None:
    with pytest.raises(PullError, match="no model acme/nothing"):
        pull("acme/nothing")
    with pytest.raises(PullError, match=r"has no file other\.gguf"):
        pull(REPO, "other.gguf")
    with pytest.raises(PullError, match="ORG/NAME"):
        pull("just-a-name")


def test_offline_the_cli_says_so_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    assert main(["models", "pull", REPO, GGUF]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith("gatehouse models pull: cannot reach http://127.0.0.1:")


def test_the_cli_pulls_and_names_the_model(
    hub: FakeHub, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["models", "pull", REPO, GGUF]) == 0
    out = capsys.readouterr()
    assert f"--model hf:{REPO}/{GGUF}" in out.out
    assert f"{GGUF}:" in out.err  # the progress lines (not a terminal: one per stage)


def test_file_choice() -> None:
    quants = ["m.Q8_0.gguf", "m.Q4_K_M.gguf", "mmproj-m.gguf", "README.md"]
    assert pick_files("a/b", quants, None) == ["m.Q4_K_M.gguf"]
    split = ["m-00001-of-00002.gguf", "m-00002-of-00002.gguf"]
    assert pick_files("a/b", split, None) == split
    many = ["m.IQ2.gguf", "m.IQ3.gguf"]
    with pytest.raises(PullError, match="has 2 GGUF files; name one"):
        pick_files("a/b", many, None)
    folder = ["config.json", "model.safetensors", "tokenizer.json", "README.md", "pic.png"]
    assert pick_files("a/b", folder, None) == ["config.json", "model.safetensors", "tokenizer.json"]
