"""SSH tunnels to a remote libvirt host's loopback: URI parsing, and a real tunnel through a private sshd."""

from __future__ import annotations

import socket
import socketserver
import threading
from pathlib import Path

import pytest
from osworld_mcp_env.backends.libvirt.ssh_tunnel import SshTarget, SshTunnel, ssh_target
from osworld_mcp_env.errors import DesktopStartError
from sshd_support import private_sshd, sshd_missing


def test_only_an_ssh_uri_naming_another_machine_needs_a_tunnel():
    assert ssh_target("qemu:///system") is None
    assert ssh_target("qemu+tcp://h/system") is None
    assert ssh_target("qemu+ssh://localhost/system") is None  # QEMU's forwards are on this loopback
    assert ssh_target("qemu+ssh://root@h:2222/system?keyfile=/k&no_verify=1") == SshTarget(
        host="h", user="root", port=2222, keyfile="/k", verify_host_key=False
    )
    assert ssh_target("qemu+ssh://127.0.0.1/system", tunnel_local=True) == SshTarget(host="127.0.0.1")


class Echo(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        self.request.sendall(b"echo:" + self.request.recv(100))


@pytest.fixture
def sshd(tmp_path: Path):
    reason = sshd_missing()
    if reason:
        pytest.skip(reason)
    with private_sshd(tmp_path) as running:
        yield running


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_tunnel_carries_a_local_port_to_the_remote_loopback_and_stops(sshd, tmp_path: Path):
    server = socketserver.TCPServer(("127.0.0.1", 0), Echo)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    target = ssh_target(sshd.uri(), tunnel_local=True)
    assert target is not None
    local = free_port()
    tunnel = SshTunnel(target, {local: server.server_address[1]}, tmp_path / "ssh.log")
    try:
        with socket.create_connection(("127.0.0.1", local), timeout=30) as conn:
            conn.sendall(b"hi")
            assert conn.recv(100) == b"echo:hi"
    finally:
        tunnel.close()
        server.shutdown()
    assert not tunnel.alive
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", local)) != 0  # ssh's listener went with it


def test_a_refused_login_is_a_start_error_with_ssh_s_words(sshd, tmp_path: Path):
    wrong = SshTarget("127.0.0.1", "root", sshd.port, str(tmp_path / "no_such_key"), verify_host_key=False)
    with pytest.raises(DesktopStartError, match="did not forward"):
        SshTunnel(wrong, {free_port(): 9}, tmp_path / "ssh.log", timeout_s=30)
