"""A Hugging Face Hub stand-in on 127.0.0.1: the endpoints ``huggingface_hub`` calls to download.

* ``GET /api/models/{org}/{name}/revision/{rev}``: the repository's commit and file list;
* ``HEAD``/``GET /{org}/{name}/resolve/{rev}/{path}``: the file, with ``X-Repo-Commit``, ``ETag``
  (the SHA-256 for LFS files, the git blob SHA-1 for small ones), ``X-Linked-Etag`` and
  ``X-Linked-Size`` for LFS files, ``Content-Length``, and ``Range`` requests (206).

Knobs for the failures a download meets: ``corrupt`` (serve other bytes under the right digest),
``stall_after`` (send that many bytes of a file, then hold the connection until released), and
``drop_after`` (send that many bytes, then close the connection mid-body).
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

COMMIT = "0123456789abcdef0123456789abcdef01234567"
LFS_THRESHOLD = 1024


@dataclass
class FakeHub:
    repos: dict[str, dict[str, bytes]] = field(default_factory=dict)
    corrupt: set[str] = field(default_factory=set)
    stall_after: dict[str, int] = field(default_factory=dict)
    drop_after: dict[str, int] = field(default_factory=dict)
    requests: list[tuple[str, str, str | None]] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)
    url: str = ""

    @staticmethod
    def etag(data: bytes) -> str:
        if len(data) >= LFS_THRESHOLD:
            return hashlib.sha256(data).hexdigest()
        return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()

    def gets(self, path_part: str) -> list[str | None]:
        """The Range headers of the GET requests for a file."""
        return [
            r for m, p, r in self.requests if m == "GET" and path_part in p and "/api/" not in p
        ]


def _handler(hub: FakeHub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            self._serve(body=True)

        def do_HEAD(self) -> None:
            self._serve(body=False)

        def _send(self, status: int, headers: dict[str, str], body: bytes = b"") -> None:
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.end_headers()
            if body:
                self.wfile.write(body)

        def _json(self, status: int, data: Any) -> None:
            body = json.dumps(data).encode()
            headers = {"Content-Type": "application/json", "Content-Length": str(len(body))}
            if status == 404:
                headers["X-Error-Code"] = "RepoNotFound"
            self._send(status, headers, body)

        def _serve(self, *, body: bool) -> None:
            hub.requests.append((self.command, self.path, self.headers.get("Range")))
            api = re.fullmatch(r"/api/models/([^/]+/[^/]+)/revision/([^/?]+)(\?.*)?", self.path)
            if api:
                files = hub.repos.get(api.group(1))
                if files is None:
                    self._json(404, {"error": "Repository not found"})
                    return
                siblings = [{"rfilename": name} for name in files]
                self._json(200, {"id": api.group(1), "sha": COMMIT, "siblings": siblings})
                return
            match = re.fullmatch(r"/([^/]+/[^/]+)/resolve/([^/]+)/(.+)", self.path)
            files = hub.repos.get(match.group(1)) if match else None
            data = files.get(match.group(3)) if files is not None and match else None
            if match is None or data is None:
                headers = {"Content-Length": "0", "X-Error-Code": "EntryNotFound"}
                if files is not None:
                    headers["X-Repo-Commit"] = COMMIT
                self._send(404, headers)
                return
            self._file(match.group(3), data, body)

        def _file(self, name: str, data: bytes, body: bool) -> None:
            etag = hub.etag(data)
            headers = {"X-Repo-Commit": COMMIT, "Accept-Ranges": "bytes", "ETag": f'"{etag}"'}
            if len(data) >= LFS_THRESHOLD:
                headers |= {"X-Linked-Etag": f'"{etag}"', "X-Linked-Size": str(len(data))}
            if name in hub.corrupt:
                data = bytes(b ^ 0xFF for b in data)
            start = 0
            wanted = re.fullmatch(r"bytes=(\d+)-", self.headers.get("Range") or "")
            status = 200
            if wanted and body:
                start, status = int(wanted.group(1)), 206
                headers["Content-Range"] = f"bytes {start}-{len(data) - 1}/{len(data)}"
            part = data[start:]
            self._send(status, headers | {"Content-Length": str(len(part))})
            if not body:
                return
            stall = hub.stall_after.pop(name, None)
            drop = hub.drop_after.pop(name, None)
            limit = stall if stall is not None else drop
            if limit is None:
                self.wfile.write(part)
                return
            self.wfile.write(part[:limit])
            self.wfile.flush()
            if stall is not None:
                hub.release.wait(30)
            self.close_connection = True

    return Handler


@contextmanager
def serve(hub: FakeHub) -> Iterator[FakeHub]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(hub))
    server.daemon_threads = True
    hub.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield hub
    finally:
        hub.release.set()
        server.shutdown()
        server.server_close()
