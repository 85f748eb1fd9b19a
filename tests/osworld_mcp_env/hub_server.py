"""A loopback HTTP server that answers as the Hugging Face Hub and plain web servers do (fetch tests).

Hub routes, as ``huggingface_hub`` requests them (``HF_ENDPOINT`` pointed here):

* ``HEAD|GET /datasets/<namespace>/<repo>/resolve/<revision>/<path>``: a regular file
  answers 200 with ``ETag`` (its git blob id), ``X-Repo-Commit`` and ``Content-Length``;
  an LFS file answers 302 to ``/cdn/<sha256>`` with ``X-Linked-Etag`` (its SHA-256),
  ``X-Linked-Size`` and ``X-Repo-Commit``, as the Hub redirects to its storage; an
  unknown path answers 404 with ``X-Error-Code: EntryNotFound``.
* ``GET /cdn/<sha256>`` on a second port (another origin, as the Hub's storage is, so
  that the client stops at the 302 and reads the metadata from it): the LFS bytes,
  honouring ``Range: bytes=N-`` (206). A file in ``cut_once`` sends half its body the
  first time and closes the connection.

Plain routes: ``/plain/<name>`` (200), ``/truncated/<name>`` (announces more bytes
than it sends, then closes), ``/slow/<name>`` (sends the headers, then nothing until
``release`` is set) and anything else 404. Every request is logged in ``requests``.
"""

from __future__ import annotations

import hashlib
import threading
import urllib.parse
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

COMMIT = "0123456789abcdef0123456789abcdef01234567"
REPO = "datasets/xlangai/ubuntu_osworld_file_cache"
HANG_LIMIT_S = 120  # a slow handler gives up after this even if no test releases it


def git_blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@dataclass(frozen=True)
class Seen:
    method: str
    path: str
    headers: dict[str, str]


@dataclass
class Site:
    """What the server holds and what it was asked."""

    hub_files: dict[str, bytes] = field(default_factory=dict)  # path in the repo -> bytes
    lfs: set[str] = field(default_factory=set)  # repo paths served through /cdn/
    plain: dict[str, bytes] = field(default_factory=dict)
    cut_once: set[str] = field(default_factory=set)  # sha256s whose first GET is cut
    wrong_etag: set[str] = field(default_factory=set)  # LFS repo paths announced with another file's sha256
    requests: list[Seen] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)
    base: str = ""
    storage: str = ""

    def hub_url(self, path: str) -> str:
        """The url a task names for ``path`` (huggingface.co, not this server)."""
        return f"https://huggingface.co/{REPO}/resolve/main/{urllib.parse.quote(path)}"

    def by_sha(self, sha: str) -> bytes | None:
        return next((d for d in self.hub_files.values() if hashlib.sha256(d).hexdigest() == sha), None)


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: requests are in ``Site.requests``."""

    def _reply(self, status: int, headers: dict[str, str], body: bytes = b"") -> None:
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()
        if self.command != "HEAD" and body:
            self.wfile.write(body)

    def do_HEAD(self) -> None:
        self._route()

    def do_GET(self) -> None:
        self._route()

    def _route(self) -> None:
        site = self.server.site
        site.requests.append(Seen(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}))
        path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path)
        prefix = f"/{REPO}/resolve/"
        if path.startswith(prefix):
            self._hub(path[len(prefix) :].split("/", 1)[1])
        elif path.startswith("/cdn/"):
            self._cdn(path[len("/cdn/") :])
        elif path.startswith("/plain/") and path[7:] in site.plain:
            self._reply(200, {"Content-Length": str(len(site.plain[path[7:]]))}, site.plain[path[7:]])
        elif path.startswith("/truncated/"):
            self._reply(200, {"Content-Length": "1000", "Connection": "close"}, b"x" * 100)
            self.close_connection = True
        elif path.startswith("/slow/"):
            self.send_response(200)
            self.send_header("Content-Length", "10")
            self.end_headers()
            self.wfile.flush()
            site.release.wait(HANG_LIMIT_S)
            self.close_connection = True
        else:
            self._reply(404, {"Content-Length": "9", "X-Error-Code": "EntryNotFound"}, b"not found")

    def _hub(self, file: str) -> None:
        site = self.server.site
        data = site.hub_files.get(file)
        if data is None:
            self._reply(404, {"Content-Length": "9", "X-Error-Code": "EntryNotFound"}, b"not found")
        elif file in site.lfs:
            sha = hashlib.sha256(data).hexdigest()
            announced = hashlib.sha256(b"other " + data).hexdigest() if file in site.wrong_etag else sha
            self._reply(
                302,
                {
                    "Location": f"{site.storage}/cdn/{sha}",
                    "X-Repo-Commit": COMMIT,
                    "X-Linked-Etag": f'"{announced}"',
                    "X-Linked-Size": str(len(data)),
                    "ETag": f'"{git_blob_id(sha.encode())}"',
                    "Content-Length": "0",
                },
            )
        else:
            headers = {
                "ETag": f'"{git_blob_id(data)}"',
                "X-Repo-Commit": COMMIT,
                "Content-Length": str(len(data)),
            }
            self._reply(200, headers, data)

    def _cdn(self, sha: str) -> None:
        site = self.server.site
        data = site.by_sha(sha)
        if data is None:
            self._reply(404, {"Content-Length": "0"})
            return
        start = 0
        ranged = self.headers.get("Range", "")
        if ranged.startswith("bytes=") and ranged.endswith("-"):
            start = int(ranged[len("bytes=") : -1])
        body = data[start:]
        headers = {"Content-Length": str(len(body)), "Accept-Ranges": "bytes"}
        if start:
            headers["Content-Range"] = f"bytes {start}-{len(data) - 1}/{len(data)}"
        if sha in site.cut_once and self.command == "GET":
            site.cut_once.discard(sha)
            self.send_response(200)
            for key, value in headers.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self._reply(206 if start else 200, headers, body)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    site: Site


@dataclass
class Running:
    """The two servers (Hub and storage) and their threads."""

    servers: list[_Server]
    threads: list[threading.Thread]

    def stop(self) -> None:
        for server in self.servers:
            server.shutdown()
            server.server_close()
        for thread in self.threads:
            thread.join()


def serve(site: Site) -> Running:
    """Starts the Hub and its storage on free loopback ports (urls in ``site.base``, ``site.storage``)."""
    servers = [_Server(("127.0.0.1", 0), _Handler) for _ in range(2)]
    for server in servers:
        server.site = site
    site.base, site.storage = (f"http://127.0.0.1:{s.server_address[1]}" for s in servers)
    threads = [threading.Thread(target=s.serve_forever, daemon=True) for s in servers]
    for thread in threads:
        thread.start()
    return Running(servers, threads)
