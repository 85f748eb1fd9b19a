"""Loopback TLS stand-ins of the websites OSWorld's tasks open, for internet-mode desktop tests.

One HTTPS server answers for every host name a test maps to it (internet mode's
``network={"hosts": ...}``). Its certificate is self-signed for those names; a
task's Chromium launch trusts it through ``--ignore-certificate-errors-spki-list``
(:func:`trusting`), which Chromium honours with an explicit ``--user-data-dir``.
A page is served by ``(host, path-with-query)``; a path nobody named gets ``HOME``.
A test that needs a site with state (a cart, cookies) passes a ``dynamic`` handler.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import http.server
import ssl
import subprocess
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import gymnasium as gym

HOME = "<html><head><title>Home</title></head><body><h1>Welcome</h1></body></html>"


@dataclass(frozen=True)
class Page:
    """One answer: its body, its type, further headers (``Set-Cookie``...) and its status."""

    body: str | bytes
    content_type: str = "text/html; charset=utf-8"
    headers: Sequence[tuple[str, str]] = ()
    status: int = 200


@dataclass
class StandIn:
    """The running server: its port, its key's pin for Chromium, and the paths it served per host."""

    port: int
    spki: str  # base64 sha256 of the certificate's public key, as Chromium's flag wants it
    served: list[tuple[str, str]] = field(default_factory=list)


Dynamic = Callable[[str, str], Page | None]
"""``(host, path)`` -> the page, or None to fall back on the fixed pages."""


def _certificate(folder: Path, hosts: Sequence[str]) -> tuple[Path, Path, str]:
    key, cert = folder / "key.pem", folder / "cert.pem"
    names = ",".join(f"DNS:{h}" for h in hosts)
    request = ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=stand-in"]
    request += ["-keyout", str(key), "-out", str(cert), "-addext", f"subjectAltName={names}"]
    subprocess.run(["openssl", *request], check=True, capture_output=True)
    der = ssl.PEM_cert_to_DER_cert(cert.read_text())
    public = subprocess.run(
        ["openssl", "x509", "-inform", "DER", "-pubkey", "-noout"], input=der, capture_output=True, check=True
    ).stdout
    spki = subprocess.run(
        ["openssl", "pkey", "-pubin", "-outform", "DER"], input=public, capture_output=True, check=True
    ).stdout
    return key, cert, base64.b64encode(hashlib.sha256(spki).digest()).decode()


@contextlib.contextmanager
def stand_in_sites(
    folder: Path,
    hosts: Sequence[str],
    pages: Mapping[tuple[str, str], str | Page],
    dynamic: Dynamic | None = None,
) -> Iterator[StandIn]:
    """One TLS server for all ``hosts``: ``dynamic``'s page, else ``pages[(host, path)]``, else HOME."""
    key, cert, spki = _certificate(folder, hosts)
    stand_in = StandIn(0, spki)

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            host = self.headers.get("Host", "").split(":")[0]
            stand_in.served.append((host, self.path))
            page = (dynamic and dynamic(host, self.path)) or pages.get((host, self.path), HOME)
            if isinstance(page, str):
                page = Page(page)
            data = page.body.encode() if isinstance(page.body, str) else page.body
            self.send_response(page.status)
            self.send_header("Content-Type", page.content_type)
            self.send_header("Content-Length", str(len(data)))
            for name, value in page.headers:
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert, key)
    server.socket = tls.wrap_socket(server.socket, server_side=True)
    stand_in.port = server.server_address[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield stand_in
    finally:
        server.shutdown()
        server.server_close()


def trusting(task_json: dict, spki: str) -> dict:
    """The task with its Chromium launch also trusting the stand-ins' certificate (changed in place)."""
    for step in task_json["config"]:
        command = step["parameters"].get("command") if step["type"] == "launch" else None
        if isinstance(command, list) and command[0] == "google-chrome":
            command += [
                "--user-data-dir=/home/user/.config/chromium",
                f"--ignore-certificate-errors-spki-list={spki}",
            ]
    return task_json


def stand_in_env(site: StandIn, hosts: Sequence[str], cache: Path) -> gym.Env:
    """An env in internet mode whose ``hosts`` resolve to ``site``, with ``cache`` as its file cache."""
    network = {"mode": "internet", "hosts": {h: f"127.0.0.1:{site.port}" for h in hosts}}
    return gym.make(
        "osworld_mcp_env:OSWorldMCP-v0",
        enable_bash=True,
        enable_mcp=False,
        step_timeout_s=120,
        network=network,
        cache_dirs=(str(cache),),
    )
