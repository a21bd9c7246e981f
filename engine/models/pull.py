"""Fetching a model from the Hugging Face Hub into the Hugging Face cache, where all tools find it.

``huggingface_hub`` (imported only here, only when a pull runs) resolves the revision and reads
each file's metadata (``X-Repo-Commit``, the ``ETag``/``X-Linked-Etag`` digest, the size). The
bytes go to ``blobs/<etag>.incomplete`` next to the final blob, through the library's
``http_get`` (which retries a dropped connection from where it stopped); that partial file is
kept when the pull is interrupted, so the next pull of the same file sends a ``Range`` request
and continues. A finished file is checked against its digest (SHA-256 for LFS files, the git
blob SHA-1 for small ones) before it becomes ``blobs/<etag>`` with its snapshot symlink; a file
that does not match is deleted, never used. ``HF_ENDPOINT``, ``HF_TOKEN``, ``HF_HUB_CACHE`` and
``HF_HOME`` are read when a pull starts.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from engine.models.entry import gguf_parts, is_listed_gguf, split_part
from engine.models.stores import hf_cache_root

DEFAULT_ENDPOINT = "https://huggingface.co"
PREFERRED_QUANTS = ("Q4_K_M", "Q4_0", "Q4_1", "Q5_K_M", "Q8_0")
"""Without a FILE, a repository with several GGUF files gives the first of these found."""
FOLDER_FILES = re.compile(
    r"(^|/)(config\.json|generation_config\.json|tokenizer[^/]*|special_tokens_map\.json"
    r"|chat_template\.(jinja|json)|vocab\.[^/]+|merges\.txt|[^/]*\.safetensors"
    r"|model\.safetensors\.index\.json)$"
)
"""A safetensors model's files (no other weights formats, no README or images)."""
_HEX40 = re.compile(r"[0-9a-f]{40}")
_HEX64 = re.compile(r"[0-9a-f]{64}")


class PullError(Exception):
    """A pull that cannot finish; the message is one line a person can act on."""


class PullCancelled(PullError):
    """The pull was cancelled; what was downloaded is kept for the next pull to continue."""


@dataclass(frozen=True)
class PullProgress:
    file: str
    done_bytes: int
    total_bytes: int | None
    stage: str  # "download", "verify", "done"


@dataclass(frozen=True)
class PullResult:
    repo: str
    revision: str
    files: list[Path]
    model_name: str
    """The name under which ``gatehouse models`` lists it (``hf:org/name/file.gguf``)."""


Progress = Callable[[PullProgress], None]


def endpoint() -> str:
    return (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


def pick_files(repo: str, siblings: list[str], file: str | None) -> list[str]:
    """The repository files one pull fetches: ``file`` (with the other parts of a split GGUF),
    the preferred GGUF, or a safetensors model's files."""
    if file is not None:
        if file not in siblings:
            raise PullError(f"{repo} has no file {file}")
        path = Path(file)
        if split_part(path) is not None:
            parts = [p.as_posix() for p in gguf_parts(path)]
            return [p for p in parts if p in siblings]
        return [file]
    ggufs = [s for s in siblings if s.lower().endswith(".gguf") and is_listed_gguf(Path(s))]
    if len(ggufs) == 1:
        return pick_files(repo, siblings, ggufs[0])
    for quant in PREFERRED_QUANTS:
        matches = [g for g in ggufs if quant.lower() in g.lower()]
        if matches:
            return pick_files(repo, siblings, sorted(matches)[0])
    if ggufs:
        shown = ", ".join(sorted(ggufs)[:8]) + (", …" if len(ggufs) > 8 else "")
        raise PullError(f"{repo} has {len(ggufs)} GGUF files; name one: {shown}")
    folder = [s for s in siblings if FOLDER_FILES.search(s)]
    if any(s.endswith(".safetensors") for s in folder) and "config.json" in folder:
        return folder
    raise PullError(f"{repo} has neither a GGUF file nor a safetensors model")


def pull(
    repo: str,
    file: str | None = None,
    *,
    revision: str = "main",
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
) -> PullResult:
    """Download ``repo`` (one GGUF file, or a safetensors model) into the Hugging Face cache.
    Blocking; raises :class:`PullError` with a one-line reason."""
    if repo.count("/") != 1 or not all(repo.split("/")):
        raise PullError(f"expected a repository as ORG/NAME, got {repo!r}")
    hub = _hub()
    url = endpoint()
    try:
        info = hub.HfApi(endpoint=url).model_info(repo, revision=revision)
        siblings = [s.rfilename for s in info.siblings or []]
        commit = str(info.sha or revision)
        files = pick_files(repo, siblings, file)
        job = _Job(hub, url, repo, commit, revision, progress, cancel)
        paths = [_fetch(job, name) for name in files]
    except PullError:
        raise
    except Exception as exc:  # the hub library's and its HTTP client's errors, made one line
        raise PullError(_explain(exc, hub, url, repo, file)) from None
    top = paths[0] if file is not None or files[0].endswith(".gguf") else paths[0].parent
    snapshot = _snapshot_dir(repo, commit)
    inner = top.relative_to(snapshot).as_posix()
    name = f"hf:{repo}" + ("" if inner == "." else f"/{inner}")
    return PullResult(repo, commit, paths, name)


def _hub() -> Any:
    try:
        import huggingface_hub  # noqa: PLC0415 - heavy, only for a pull
        from huggingface_hub import file_download  # noqa: PLC0415
        from huggingface_hub.utils.tqdm import disable_progress_bars  # noqa: PLC0415
    except ImportError:
        raise PullError("pulling needs huggingface_hub: pip install huggingface_hub") from None
    disable_progress_bars()  # progress is ours to show
    return _Hub(huggingface_hub, file_download)


class _Hub:
    """The few things used from ``huggingface_hub``, looked up once."""

    def __init__(self, package: Any, file_download: Any) -> None:
        self.HfApi = package.HfApi
        self.errors = package.errors
        self.hf_hub_url = file_download.hf_hub_url
        self.get_hf_file_metadata = file_download.get_hf_file_metadata
        self.http_get = file_download.http_get
        self.build_hf_headers = package.utils.build_hf_headers


def _storage(repo: str) -> Path:
    return hf_cache_root() / ("models--" + repo.replace("/", "--"))


def _snapshot_dir(repo: str, commit: str) -> Path:
    return _storage(repo) / "snapshots" / commit


@dataclass(frozen=True)
class _Job:
    hub: _Hub
    url: str
    repo: str
    commit: str
    revision: str
    progress: Progress | None
    cancel: threading.Event | None


def _fetch(job: _Job, name: str) -> Path:
    """One file into the cache; returns its snapshot path."""
    hub, url, repo, commit, revision = job.hub, job.url, job.repo, job.commit, job.revision
    progress, cancel = job.progress, job.cancel
    file_url = hub.hf_hub_url(repo, name, revision=commit, endpoint=url)
    meta = hub.get_hf_file_metadata(file_url, endpoint=url)
    etag, size = meta.etag, meta.size
    if not etag or not re.fullmatch(r"[0-9A-Za-z._-]+", etag):
        raise PullError(f"{url} gave no usable ETag for {name}")
    storage = _storage(repo)
    blob = storage / "blobs" / etag
    pointer = storage / "snapshots" / (meta.commit_hash or commit) / name
    if not blob.is_file():
        blob.parent.mkdir(parents=True, exist_ok=True)
        partial = blob.with_name(etag + ".incomplete")
        headers = hub.build_hf_headers()
        location = meta.location or file_url
        if _host(location) != _host(file_url):
            headers.pop("authorization", None)  # a CDN gets no token
        with partial.open("ab") as raw:
            done = raw.tell()
            if size is not None and done > size:
                raw.truncate(0)
                done = 0
            sink = _Sink(raw, name, size, progress, cancel)
            hub.http_get(location, sink, resume_size=done, headers=headers, expected_size=size)
        _verify(partial, etag, name, progress)
        partial.replace(blob)
    pointer.parent.mkdir(parents=True, exist_ok=True)
    if not pointer.exists():
        if pointer.is_symlink():
            pointer.unlink()
        pointer.symlink_to(os.path.relpath(blob, pointer.parent))
    if revision != commit and not _HEX40.fullmatch(revision):
        refs = storage / "refs" / revision
        refs.parent.mkdir(parents=True, exist_ok=True)
        refs.write_text(meta.commit_hash or commit, encoding="ascii")
    if progress is not None:
        progress(PullProgress(name, blob.stat().st_size, size, "done"))
    return pointer


def _host(url: str) -> str:
    from urllib.parse import urlsplit  # noqa: PLC0415

    return urlsplit(url).netloc


class _Sink:
    """The partial file, as ``http_get`` writes it: reports progress, stops on cancel."""

    def __init__(
        self,
        file: BinaryIO,
        name: str,
        total: int | None,
        progress: Progress | None,
        cancel: threading.Event | None,
    ) -> None:
        self._file, self._name, self._total = file, name, total
        self._progress, self._cancel = progress, cancel

    def write(self, data: bytes) -> int:
        if self._cancel is not None and self._cancel.is_set():
            raise PullCancelled(f"cancelled; run the pull again to continue {self._name}")
        written = self._file.write(data)
        if self._progress is not None:
            self._progress(PullProgress(self._name, self._file.tell(), self._total, "download"))
        return written

    def tell(self) -> int:
        return self._file.tell()

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._file.seek(offset, whence)

    def truncate(self, size: int | None = None) -> int:
        return self._file.truncate(size)


def _verify(path: Path, etag: str, name: str, progress: Progress | None) -> None:
    """Check the file against the digest the hub gave: SHA-256 (LFS) or the git blob SHA-1."""
    size = path.stat().st_size
    if progress is not None:
        progress(PullProgress(name, size, size, "verify"))
    if _HEX64.fullmatch(etag):
        digest = hashlib.sha256()
    elif _HEX40.fullmatch(etag):
        digest = hashlib.sha1(usedforsecurity=False)
        digest.update(f"blob {size}\0".encode())
    else:
        return  # not a content digest (some mirrors): the size check already ran
    with path.open("rb") as file:
        while chunk := file.read(1 << 20):
            digest.update(chunk)
    if digest.hexdigest() != etag:
        path.unlink(missing_ok=True)
        raise PullError(
            f"checksum mismatch for {name}: expected {etag}, got {digest.hexdigest()}; "
            "the download was discarded"
        )


def _explain(exc: Exception, hub: _Hub, url: str, repo: str, file: str | None) -> str:
    errors = hub.errors
    if isinstance(exc, errors.OfflineModeIsEnabled):
        return "HF_HUB_OFFLINE is set: unset it to download"
    if isinstance(exc, errors.GatedRepoError):
        return f"{repo} is gated: accept its terms on the Hub and set HF_TOKEN"
    if isinstance(exc, errors.RepositoryNotFoundError):
        return f"no model {repo} on {url} (or it is private: set HF_TOKEN)"
    if isinstance(exc, errors.RevisionNotFoundError):
        return f"{repo} has no such revision"
    if isinstance(exc, errors.EntryNotFoundError):
        return f"{repo} has no file {file}"
    if isinstance(exc, errors.HfHubHTTPError):
        status = getattr(getattr(exc, "response", None), "status_code", "?")
        return f"{url} answered HTTP {status} for {repo}"
    kind = type(exc).__name__
    if isinstance(exc, ConnectionError | TimeoutError) or "Connect" in kind or "Timeout" in kind:
        return f"cannot reach {url} ({kind}): check the network, or HF_ENDPOINT"
    detail = str(exc).strip().splitlines()[0] if str(exc).strip() else kind
    return f"the download from {url} failed: {detail}"
