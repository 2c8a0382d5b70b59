"""A fake Hugging Face Hub on 127.0.0.1 for tests: the endpoints ``huggingface_hub`` calls.

- ``HEAD``/``GET /{org}/{name}/resolve/{revision}/{file}`` with ``Range: bytes=a-b`` (206), the
  ``ETag`` and ``X-Repo-Commit`` headers the library needs, and the Hub's error codes
  (``X-Error-Code``: RepoNotFound 404, GatedRepo 401 without a token / 403 with a wrong one,
  RevisionNotFound 404, EntryNotFound 404);
- ``GET /api/models/{org}/{name}/revision/{revision}``: the repo's sha and file list.

Every request is logged (method, path, range) so tests can say what was, and was not, fetched.
"""

from __future__ import annotations

import hashlib
import json
import struct
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

GOOD_TOKEN = "hf_fake_good_token"


def sha_of(*parts: str) -> str:
    return hashlib.sha1("/".join(parts).encode()).hexdigest()


@dataclass
class Repo:
    """Files by revision name (``main``, ``v2`` …); ``gated`` needs GOOD_TOKEN; ``delay`` seconds
    before every answer (to hit a client timeout)."""

    revisions: dict[str, dict[str, bytes]]
    gated: bool = False
    delay: float = 0.0

    def commit(self, repo_id: str, rev: str) -> str:
        return sha_of(repo_id, rev)

    def files_at(self, repo_id: str, rev: str) -> tuple[str, dict[str, bytes]] | None:
        for name, files in self.revisions.items():
            sha = self.commit(repo_id, name)
            if rev in (name, sha):
                return sha, files
        return None


@dataclass
class FakeHub:
    repos: dict[str, Repo] = field(default_factory=dict)
    log: list[tuple[str, str, str | None]] = field(default_factory=list)
    url: str = ""

    def add(self, repo_id: str, files: Mapping[str, bytes | dict[str, object]], **kw: object) -> Repo:
        repo = Repo({"main": _encode(files)}, **kw)  # type: ignore[arg-type]
        self.repos[repo_id] = repo
        return repo

    def requested(self, repo_id: str) -> list[tuple[str, str, str | None]]:
        return [entry for entry in self.log if f"/{repo_id}/" in entry[1]]


def _encode(files: Mapping[str, bytes | dict[str, object]]) -> dict[str, bytes]:
    return {k: v if isinstance(v, bytes) else json.dumps(v).encode() for k, v in files.items()}


def safetensors_bytes(tensors: Mapping[str, tuple[str, tuple[int, ...]]]) -> bytes:
    """A valid .safetensors file of zeros: name → (dtype, shape)."""
    sizes = {"F32": 4, "BF16": 2, "F16": 2, "F8_E4M3": 1, "I32": 4, "U8": 1, "I8": 1}
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, (dtype, shape) in tensors.items():
        n = sizes[dtype]
        for d in shape:
            n *= d
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + n]}
        offset += n
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    return struct.pack("<Q", len(raw)) + raw + bytes(offset)


def _handler(hub: FakeHub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:  # quiet
            pass

        def do_HEAD(self) -> None:
            self._serve(head=True)

        def do_GET(self) -> None:
            self._serve(head=False)

        def _send(self, status: int, body: bytes, headers: Mapping[str, str], head: bool) -> None:
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if not head:
                self.wfile.write(body)

        def _error(self, status: int, code: str, head: bool, **extra: str) -> None:
            body = json.dumps({"error": code}).encode()
            self._send(status, body, {"X-Error-Code": code, "Content-Type": "application/json", **extra}, head)

        def _serve(self, head: bool) -> None:
            path = unquote(urlsplit(self.path).path)
            hub.log.append((self.command, path, self.headers.get("Range")))
            parts = path.strip("/").split("/")
            if parts[:2] == ["api", "models"] and len(parts) >= 6 and parts[4] == "revision":
                repo_id, rev, file = f"{parts[2]}/{parts[3]}", "/".join(parts[5:]), None
            elif len(parts) >= 5 and parts[2] == "resolve":
                repo_id, rev, file = f"{parts[0]}/{parts[1]}", parts[3], "/".join(parts[4:])
            else:
                self._error(404, "NotFound", head)
                return
            repo = hub.repos.get(repo_id)
            if repo is None:
                self._error(404, "RepoNotFound", head)
                return
            if repo.delay:
                time.sleep(repo.delay)
            if repo.gated:
                auth = self.headers.get("Authorization")
                if auth is None:
                    self._error(401, "GatedRepo", head)
                    return
                if auth != f"Bearer {GOOD_TOKEN}":
                    self._error(403, "GatedRepo", head)
                    return
            found = repo.files_at(repo_id, rev)
            if found is None:
                self._error(404, "RevisionNotFound", head)
                return
            sha, files = found
            if file is None:
                info = {"id": repo_id, "sha": sha,
                        "siblings": [{"rfilename": f, "size": len(files[f])} for f in sorted(files)]}
                self._send(200, json.dumps(info).encode(), {"Content-Type": "application/json"}, head)
                return
            if file not in files:
                self._error(404, "EntryNotFound", head, **{"X-Repo-Commit": sha})
                return
            data = files[file]
            headers = {
                "ETag": '"' + hashlib.sha256(data).hexdigest() + '"',
                "X-Repo-Commit": sha,
                "Accept-Ranges": "bytes",
            }
            wanted = self.headers.get("Range")
            if wanted and wanted.startswith("bytes="):
                start_text, _, end_text = wanted[6:].partition("-")
                start = int(start_text)
                end = min(int(end_text) if end_text else len(data) - 1, len(data) - 1)
                headers["Content-Range"] = f"bytes {start}-{end}/{len(data)}"
                self._send(206, data[start : end + 1], headers, head)
                return
            self._send(200, data, headers, head)

    return Handler


def serve(hub: FakeHub) -> Iterator[FakeHub]:
    """Run ``hub`` on a free port of 127.0.0.1 until the generator is closed."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(hub))
    server.daemon_threads = True
    hub.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield hub
    finally:
        server.shutdown()
        server.server_close()
