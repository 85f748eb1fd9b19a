"""The tool host's privilege drop (``--desktop-uid``): the desktop user's rights, but not its reach.

Run as host root with an unused uid standing in for the desktop user, the way
guest/session.sh starts the host as its namespace's root: the host must keep uid
0 as real and saved uid (so that user can neither signal nor trace it), touch
files as that user, and start programs that are that user in every id.
"""

from __future__ import annotations

import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from osworld_mcp_env.mcp_host.client import MCPToolClient
from polling import wait_until

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="acting as another uid needs root"),
    pytest.mark.timeout(180),
]

SERVER = textwrap.dedent("""
    import sys
    from pathlib import Path
    from osworld_mcp_env.mcp_servers import ServerConfig, serve_all

    socket_path, home, probe, uid = sys.argv[1:5]
    config = ServerConfig(home=Path(home), terminal_command=(probe,))
    serve_all(socket_path, config, namespaces=("os",), desktop_uid=int(uid))
""")

# Started by os.open_shell (the "terminal"): records the ids it runs with, in its cwd (home).
PROBE = """#!/bin/sh
grep -E '^(Uid|Gid|Groups):' /proc/self/status > probe-ids.tmp && mv probe-ids.tmp probe-ids
"""


def unused_uid() -> int:
    uid = 47_000
    while True:
        try:
            pwd.getpwuid(uid)
        except KeyError:
            return uid
        uid += 1


@dataclass
class DroppedHost:
    pid: int
    uid: int
    socket: Path
    home: Path
    client: MCPToolClient

    def as_user(self, script: str) -> subprocess.CompletedProcess[str]:
        """Runs a shell snippet as the desktop user (every id)."""
        return subprocess.run(
            ["/bin/sh", "-c", script],
            user=self.uid,
            group=self.uid,
            extra_groups=[],
            capture_output=True,
            text=True,
            timeout=30,
            cwd="/",
        )


@pytest.fixture(scope="module")
def host() -> Iterator[DroppedHost]:
    uid = unused_uid()
    ctl = Path(tempfile.mkdtemp(prefix="mcp-ctl-"))  # 0700, root's: the user can neither reach nor replace it
    home = Path(tempfile.mkdtemp(prefix="mcp-home-"))
    os.chown(home, uid, uid)
    bindir = Path(tempfile.mkdtemp(prefix="mcp-bin-"))
    bindir.chmod(0o755)
    probe = bindir / "probe"
    probe.write_text(PROBE)
    probe.chmod(0o755)
    socket = ctl / "mcp.sock"
    proc = subprocess.Popen([sys.executable, "-c", SERVER, str(socket), str(home), str(probe), str(uid)])
    try:
        wait_until(socket.exists, 60, "the tool host's socket")
        with MCPToolClient(socket, connect_timeout_s=60) as client:
            yield DroppedHost(proc.pid, uid, socket, home, client)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        for path in (ctl, home, bindir):
            shutil.rmtree(path, ignore_errors=True)


def _ids(status: str, field: str) -> list[int]:
    line = next(line for line in status.splitlines() if line.startswith(f"{field}:"))
    return [int(v) for v in line.split()[1:]]


def test_the_host_acts_as_the_user_but_keeps_root_as_real_and_saved_uid(host: DroppedHost) -> None:
    assert host.client.call("os.calculator", {"expression": "1+1"}).exec_ok
    status = Path(f"/proc/{host.pid}/status").read_text()
    assert _ids(status, "Uid") == [0, host.uid, 0, host.uid]  # real, effective, saved, filesystem
    assert _ids(status, "Gid") == [0, host.uid, 0, host.uid]
    assert _ids(status, "Groups") == []


def test_the_socket_is_the_hosts_alone(host: DroppedHost) -> None:
    info = host.socket.lstat()
    assert stat.S_ISSOCK(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o600 and info.st_uid == 0
    reach = host.as_user(f"test -e {host.socket} && echo reachable")
    assert "reachable" not in reach.stdout, "the control directory must keep the user out"


def test_the_user_can_neither_signal_nor_trace_the_host(host: DroppedHost) -> None:
    own = host.as_user("kill -0 $$")
    assert own.returncode == 0, "control: the user may signal its own processes"
    signal = host.as_user(f"kill -0 {host.pid}")
    assert signal.returncode != 0 and "not permitted" in signal.stderr.lower(), signal
    trace = host.as_user(f"cat /proc/{host.pid}/environ")
    assert trace.returncode != 0, "reading environ needs ptrace access to the host"


def test_files_a_tool_writes_belong_to_the_user(host: DroppedHost) -> None:
    r = host.client.call("os.set_default_terminal_size", {"columns": 100, "rows": 30})
    assert r.exec_ok, r.text
    written = host.home / ".config/xfce4/terminal/terminalrc"
    for path in (written, written.parent, host.home / ".config"):
        info = path.stat()
        assert (info.st_uid, info.st_gid) == (host.uid, host.uid), path


def test_a_program_a_tool_starts_is_the_user_in_every_id(host: DroppedHost) -> None:
    r = host.client.call("os.open_shell", {})
    assert r.exec_ok, r.text
    ids = host.home / "probe-ids"
    wait_until(ids.exists, 30, "the started program's ids")
    status = ids.read_text()
    assert _ids(status, "Uid") == [host.uid] * 4
    assert _ids(status, "Gid") == [host.uid] * 4
    assert _ids(status, "Groups") == []
