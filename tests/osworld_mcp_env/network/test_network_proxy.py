"""The host proxy as a real process on its Unix socket, against real servers on the host.

It runs as an unprivileged uid, as it does for a desktop (its infrastructure uid);
the client speaks to its socket exactly as the sandbox's relay does.
"""

from __future__ import annotations

import base64
import os
import shutil
import socket
import tempfile
import threading
from pathlib import Path

import pytest
from net_support import Tripwire, UpstreamProxy, Website, ask
from osworld_mcp_env.network import NetworkConfig, NetworkMode
from osworld_mcp_env.network import proxy as proxy_module
from osworld_mcp_env.network.host_proxy import HostProxy
from osworld_mcp_env.network.policy import host_addresses
from polling import wait_until

PROXY_UID = 65534  # nobody: the proxy never needs more than an unprivileged uid
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="starting the proxy as another uid needs root")


@pytest.fixture
def site():
    with Website().serving() as website:
        yield website


@pytest.fixture
def tripwire():
    wire = Tripwire()
    yield wire
    wire.close()


@pytest.fixture
def start_proxy():
    started: list[tuple[HostProxy, Path]] = []

    def start(**fields) -> tuple[HostProxy, str]:
        directory = Path(tempfile.mkdtemp(prefix="net-proxy-"))
        os.chown(directory, PROXY_UID, PROXY_UID)
        proxy = HostProxy()
        path = directory / "proxy.sock"
        proxy.spawn(
            NetworkConfig(mode=NetworkMode.INTERNET, **fields), path, uid=PROXY_UID, log=directory / "log"
        )
        proxy.wait_ready()
        started.append((proxy, directory))
        return proxy, str(path)

    yield start
    for proxy, directory in started:
        proxy.stop()
        shutil.rmtree(directory)


def status(reply: bytes) -> int:
    return int(reply.split(b" ")[1])


def test_a_mapped_name_is_reached_by_tunnel_and_by_forwarded_request(start_proxy, site):
    _proxy, path = start_proxy(hosts={"site.test": f"127.0.0.1:{site.port}"})
    get = b"GET /tunnel HTTP/1.1\r\nHost: site.test\r\nConnection: close\r\n\r\n"
    reply, body = ask(path, b"CONNECT site.test:443 HTTP/1.1\r\nHost: site.test:443\r\n\r\n", then=get)
    assert status(reply) == 200 and f"site {site.token} /tunnel" in body.decode()
    reply, body = ask(
        path,
        b"GET http://site.test/plain?q=1 HTTP/1.1\r\nHost: site.test\r\nProxy-Authorization: Basic eDp5\r\n"
        b"Proxy-Connection: keep-alive\r\n\r\n",
    )
    assert status(reply) == 200 and f"site {site.token} /plain?q=1" in body.decode()
    # The server got an origin-form request, one per connection, and nothing meant for the proxy.
    path_seen, headers = site.requests[-1]
    assert path_seen == "/plain?q=1" and headers["Connection"] == "close"
    assert not {"Proxy-Authorization", "Proxy-Connection"} & set(headers)


def test_host_services_are_refused_however_they_are_spelled(start_proxy, tripwire):
    _proxy, path = start_proxy()
    own = sorted(str(a) for a in host_addresses() if not a.is_loopback and not a.is_link_local)
    spellings = ["127.0.0.1", "localhost", "[::1]", "[::ffff:127.0.0.1]", "0.0.0.0", "2130706433", "127.1"]
    spellings += [f"[{a}]" if ":" in a else a for a in own]
    for spelling in spellings:
        for head in (
            f"CONNECT {spelling}:{tripwire.port} HTTP/1.1\r\n\r\n",
            f"GET http://{spelling}:{tripwire.port}/ HTTP/1.1\r\n\r\n",
        ):
            reply, body = ask(path, head.encode())
            assert status(reply) == 403, (head, reply, body)
            assert b"refused" in body
    assert tripwire.accepted == 0


def test_a_mapping_opens_its_name_only(start_proxy, site, tripwire):
    _proxy, path = start_proxy(hosts={"site.test": f"127.0.0.1:{site.port}"}, allow=("site.test",))
    reply, body = ask(path, f"CONNECT 127.0.0.1:{site.port} HTTP/1.1\r\n\r\n".encode())
    assert status(reply) == 403 and b"only the allowed names" in body
    reply, body = ask(path, b"CONNECT other.test:80 HTTP/1.1\r\n\r\n")
    assert status(reply) == 403 and b"not on the allowlist" in body
    assert tripwire.accepted == 0


@pytest.mark.parametrize(
    ("head", "code"),
    [
        (b"GARBAGE\r\n\r\n", 400),
        (b"GET /relative HTTP/1.1\r\nHost: x\r\n\r\n", 400),
        (b"GET https://site.test/ HTTP/1.1\r\n\r\n", 400),
        (b"CONNECT site.test HTTP/1.1\r\n\r\n", 400),
        (b"CONNECT site.test:99999 HTTP/1.1\r\n\r\n", 400),
        (b"CONNECT site.test:80 HTTP/2.0\r\n\r\n", 400),
        (b"GET http://site.test/ HTTP/1.1\r\nX-Big: " + b"a" * 20000 + b"\r\n\r\n", 431),
    ],
)
def test_malformed_requests_get_a_clear_status_and_go_nowhere(start_proxy, site, head, code):
    _proxy, path = start_proxy(hosts={"site.test": f"127.0.0.1:{site.port}"})
    reply, _body = ask(path, head)
    assert status(reply) == code
    assert site.requests == []


def test_a_closed_port_is_a_bad_gateway(start_proxy):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # bound, never listening: connections are refused
        _proxy, path = start_proxy(hosts={"dead.test": f"127.0.0.1:{port}"})
        reply, body = ask(path, b"CONNECT dead.test:80 HTTP/1.1\r\n\r\n")
    assert status(reply) == 502 and b"127.0.0.1" in body


def test_connections_beyond_the_cap_are_answered_503(start_proxy, site):
    _proxy, path = start_proxy(hosts={"site.test": f"127.0.0.1:{site.port}"}, max_connections=1)
    with socket.socket(socket.AF_UNIX) as held:
        held.settimeout(30)
        held.connect(path)
        held.sendall(b"CONNECT site.test:80 HTTP/1.1\r\n\r\n")
        assert held.recv(4096).startswith(b"HTTP/1.1 200")  # the one slot is taken
        reply, _body = ask(path, b"CONNECT site.test:80 HTTP/1.1\r\n\r\n")
        assert status(reply) == 503

    def slot_back() -> bool:  # the proxy frees the slot once both ends of the tunnel closed
        return (
            status(ask(path, b"CONNECT site.test:80 HTTP/1.1\r\n\r\n", then=b"GET / HTTP/1.0\r\n\r\n")[0])
            == 200
        )

    wait_until(slot_back, timeout=30, what="the tunnel's slot to come back")


def test_an_upstream_proxy_carries_every_tunnel_with_its_credentials(start_proxy, site):
    upstream = UpstreamProxy("user:p@ss")
    try:
        url = f"http://user:p%40ss@127.0.0.1:{upstream.port}"
        _proxy, path = start_proxy(hosts={"site.test": f"127.0.0.1:{site.port}"}, proxy_url=url)
        get = b"GET /up HTTP/1.1\r\nHost: site.test\r\nConnection: close\r\n\r\n"
        reply, body = ask(path, b"CONNECT site.test:443 HTTP/1.1\r\n\r\n", then=get)
        assert status(reply) == 200 and f"site {site.token} /up" in body.decode()
        auth = base64.b64encode(b"user:p@ss").decode()
        assert upstream.heads[-1].startswith(f"CONNECT 127.0.0.1:{site.port} HTTP/1.1\r\n")
        assert f"Proxy-Authorization: Basic {auth}\r\n" in upstream.heads[-1]
        reply, body = ask(path, b"GET http://site.test/plain HTTP/1.1\r\nHost: site.test\r\n\r\n")
        assert status(reply) == 200 and f"site {site.token} /plain" in body.decode()
        assert upstream.heads[-1].startswith(f"GET http://127.0.0.1:{site.port}/plain HTTP/1.1\r\n")
        assert f"Proxy-Authorization: Basic {auth}\r\n" in upstream.heads[-1]
        # The policy still decides before the upstream sees anything.
        seen = len(upstream.heads)
        reply, _body = ask(path, b"CONNECT 127.0.0.1:22 HTTP/1.1\r\n\r\n")
        assert status(reply) == 403 and len(upstream.heads) == seen
    finally:
        upstream.close()


def test_an_upstream_refusal_is_a_bad_gateway_that_names_it(start_proxy, site):
    upstream = UpstreamProxy("user:right")
    try:
        url = f"http://user:wrong@127.0.0.1:{upstream.port}"
        _proxy, path = start_proxy(hosts={"site.test": f"127.0.0.1:{site.port}"}, proxy_url=url)
        reply, body = ask(path, b"CONNECT site.test:443 HTTP/1.1\r\n\r\n")
        assert status(reply) == 502 and b"407 Proxy Authentication Required" in body
        assert b"wrong" not in body
    finally:
        upstream.close()


def test_the_proxy_runs_unprivileged_and_ends_with_its_host_pipe(start_proxy):
    proxy, path = start_proxy()
    assert proxy.process is not None
    pid = proxy.process.pid
    assert os.stat(f"/proc/{pid}").st_uid == PROXY_UID
    assert oct(os.stat(path).st_mode & 0o777) == "0o700"
    process = proxy.process
    assert process.stdin is not None
    process.stdin.close()  # what a host killed with SIGKILL leaves the proxy: EOF
    assert process.wait(timeout=30) == 0
    assert not Path(path).exists()
    proxy.stop()
    assert not proxy.running


def test_stop_removes_process_and_socket(start_proxy):
    proxy, path = start_proxy()
    assert proxy.process is not None
    pid = proxy.process.pid
    proxy.stop()
    proxy.stop()
    assert not Path(path).exists() and not os.path.exists(f"/proc/{pid}")


def test_tunnels_run_at_once(start_proxy, site):
    _proxy, path = start_proxy(hosts={"site.test": f"127.0.0.1:{site.port}"})
    results: list[bytes] = []

    def one(i: int) -> None:
        get = f"GET /{i} HTTP/1.1\r\nHost: site.test\r\nConnection: close\r\n\r\n".encode()
        results.append(ask(path, b"CONNECT site.test:80 HTTP/1.1\r\n\r\n", then=get)[1])

    threads = [threading.Thread(target=one, args=(i,)) for i in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(r.decode().rsplit(" ", 1)[-1].strip() for r in results) == sorted(
        f"/{i}" for i in range(16)
    )


def test_the_log_on_the_hosts_disk_stops_at_its_cap(monkeypatch, capsys):
    monkeypatch.setattr(proxy_module, "LOG_LINES", 3)
    proxy = proxy_module.Proxy(NetworkConfig(mode=NetworkMode.INTERNET))
    for i in range(10):
        proxy._log(f"line {i}")
    assert capsys.readouterr().err.splitlines() == [
        "line 0",
        "line 1",
        "log cap of 3 lines reached; no more lines",
    ]
