"""Internet mode on real desktops, probed from inside as the (hostile) desktop user.

A web server on the host's loopback stands for a website, reached by the name the
task would use (``hosts`` maps it, as the proxy's resolver would); a tripwire
listening on every host address stands for the host's services. A second, default
desktop is the sibling the internet desktop must not reach.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest
from net_support import Tripwire, Website
from osworld_mcp_env.backends.local.desktop import LocalDesktop, LocalDesktopConfig
from osworld_mcp_env.evaluators import GETTERS
from osworld_mcp_env.network import RELAY_PORT
from osworld_mcp_env.network.policy import host_addresses
from osworld_mcp_env.tasks import TaskContext
from osworld_mcp_env.tasks.setup import SETUP_STEPS
from polling import wait_until

pytestmark = [pytest.mark.desktop, pytest.mark.slow]
SIBLING_PORT = 8765

# Every way out a desktop user might try: directly (the sandbox's own loopback) and through the
# relay with each spelling of the host, as a tunnel and as a forwarded request. Prints JSON results.
PROBE = textwrap.dedent(
    """
    import json, socket, sys
    targets, port, relay = json.loads(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    out = {}
    def first_line(head):
        s = socket.create_connection(("127.0.0.1", relay), timeout=20)
        s.sendall(head.encode())
        data = b""
        while b"\\r\\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
        s.close()
        return data.split(b"\\r\\n")[0].decode()
    for host in targets:
        bare = host.strip("[]")
        try:
            socket.create_connection((bare, port), timeout=5).close()
            out["direct " + host] = "connected"
        except OSError as exc:
            out["direct " + host] = type(exc).__name__
        out["connect " + host] = first_line(f"CONNECT {host}:{port} HTTP/1.1\\r\\n\\r\\n")
        out["get " + host] = first_line(f"GET http://{host}:{port}/ HTTP/1.1\\r\\n\\r\\n")
    print(json.dumps(out))
    """
)


@pytest.fixture(scope="module")
def site():
    with Website().serving() as website:
        yield website


@pytest.fixture(scope="module")
def tripwire():
    wire = Tripwire()
    yield wire
    wire.close()


@pytest.fixture(scope="module")
def online(site):
    network = {"mode": "internet", "hosts": {"www.site.test": f"127.0.0.1:{site.port}"}}
    desk = LocalDesktop(LocalDesktopConfig(libreoffice_template=False, network=network))
    yield desk
    desk.close()


@pytest.fixture(scope="module")
def sibling():
    """A default (loopback) desktop with a server of its user on its own loopback."""
    desk = LocalDesktop(LocalDesktopConfig(libreoffice_template=False))
    desk.launch(f"/usr/bin/python3 -m http.server {SIBLING_PORT} --bind 127.0.0.1", shell=True)
    wait_until(
        lambda: sh(desk, f"curl -s -o /dev/null http://127.0.0.1:{SIBLING_PORT}/").returncode == 0,
        what="the sibling's server",
    )
    yield desk
    desk.close()


def sh(desktop: LocalDesktop, script: str):
    return desktop.execute(script, shell=True, timeout=60)


def probe(desktop: LocalDesktop, targets: list[str], port: int) -> dict[str, str]:
    quoted = json.dumps(targets).replace("'", "'\\''")
    result = sh(desktop, f"/usr/bin/python3 -c '{PROBE}' '{quoted}' {port} {RELAY_PORT}")
    assert result.returncode == 0, result.error
    return json.loads(result.output)


def test_the_desktop_reaches_the_site_by_the_name_the_task_uses(online, site):
    plain = sh(online, "curl -sS -m 20 http://www.site.test/page")
    assert plain.returncode == 0 and plain.output == f"site {site.token} /page\n", plain.error
    tunnel = sh(online, "curl -sS -m 20 --proxytunnel https://www.site.test:80/x --http1.1 -k || true; "
                "curl -sS -m 20 -p http://www.site.test/tunnel")  # fmt: skip
    assert tunnel.output.endswith(f"site {site.token} /tunnel\n"), tunnel.error
    assert sh(online, "id -u").output.strip() == "1000"


def test_a_hostile_user_cannot_reach_host_services(online, tripwire):
    own = sorted(str(a) for a in host_addresses() if not a.is_loopback and not a.is_link_local)
    spellings = ["127.0.0.1", "localhost", "[::1]", "[::ffff:127.0.0.1]", "0.0.0.0", "2130706433", "127.1"]
    spellings += [f"[{a}]" if ":" in a else a for a in own]
    results = probe(online, spellings, tripwire.port)
    for key, value in results.items():
        if key.startswith("direct "):
            assert value != "connected", key  # the sandbox's loopback holds no such service
        else:
            assert value.startswith("HTTP/1.1 403"), (key, value)
    assert tripwire.accepted == 0


def test_a_hostile_user_cannot_reach_a_sibling_desktop(online, sibling):
    results = probe(online, ["127.0.0.1", "localhost"], SIBLING_PORT)
    assert results["direct 127.0.0.1"] != "connected"
    assert all(v.startswith("HTTP/1.1 403") for k, v in results.items() if not k.startswith("direct"))
    # The sibling's guest and tool sockets are host paths no sandbox binds; its ports live in its own netns.
    for path in (sibling.ctl_dir / "guest.sock", sibling.ctl_dir / "mcp.sock", sibling.ctl_dir):
        attack = sh(
            online,
            f"ls -ld {path} || /usr/bin/python3 -c 'import socket; socket.socket(1).connect(\"{path}\")'",
        )
        assert attack.returncode != 0 and "No such file" in attack.error, attack


def test_the_proxy_socket_and_relay_belong_to_the_infrastructure(online):
    attack = sh(online, "ls /run/ctl")
    assert attack.returncode != 0 and "Permission denied" in attack.error
    taken = sh(
        online, f"/usr/bin/python3 -c 'import socket; socket.create_server((\"127.0.0.1\", {RELAY_PORT}))'"
    )
    assert taken.returncode != 0 and "Address already in use" in taken.error
    relay = sh(online, "pgrep -f proxy_relay").output.split()
    assert relay, "no relay in the desktop"
    kill = sh(online, f"kill -9 {relay[0]}")
    assert kill.returncode != 0 and "not permitted" in kill.error


def test_a_loopback_desktop_has_no_way_out(sibling, site):
    assert "proxy" not in sh(sibling, "env").output.lower()
    attempt = sh(sibling, f"curl -sS -m 10 -x http://127.0.0.1:{RELAY_PORT} http://www.site.test/")
    assert attempt.returncode != 0 and "Failed to connect" in attempt.error
    assert sh(sibling, "ls /run/ctl/net-proxy.sock").returncode != 0


def test_a_replaced_sandbox_gets_its_way_out_back(online, site):
    online.restart(full=True)
    plain = sh(online, "curl -sS -m 20 http://www.site.test/again")
    assert plain.output == f"site {site.token} /again\n", plain.error


def _live_pids_of(uids: set[int]) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        try:
            if (
                entry.isdigit()
                and os.stat(f"/proc/{entry}").st_uid in uids
                and Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
            ):
                found.append(int(entry))
        except OSError:
            continue  # gone meanwhile
    return found


def _network_state() -> dict[str, str]:
    state = {"links": subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout}
    state["netns"] = " ".join(sorted(os.listdir("/run/netns"))) if os.path.isdir("/run/netns") else ""
    if shutil.which("iptables-save"):
        rules = subprocess.run(["iptables-save"], capture_output=True, text=True).stdout
        state["iptables"] = "\n".join(line for line in rules.splitlines() if not line.startswith("#"))
    return state


def test_close_leaves_no_process_socket_or_network_state(site):
    before = _network_state()
    network = {"mode": "internet", "hosts": {"www.site.test": f"127.0.0.1:{site.port}"}}
    desk = LocalDesktop(LocalDesktopConfig(libreoffice_template=False, network=network))
    assert sh(desk, "curl -sS -m 20 http://www.site.test/").returncode == 0
    proxy = desk._proxy.process
    assert proxy is not None
    socket_path = desk.ctl_dir / "net-proxy.sock"
    assert socket_path.is_socket()
    if desk.cgroup.active:  # what the desktop makes its proxy spend counts against its own bounds
        assert desk.instance_dir.name in Path(f"/proc/{proxy.pid}/cgroup").read_text()
    desk.close()
    assert proxy.poll() is not None and not os.path.exists(f"/proc/{proxy.pid}")
    assert _live_pids_of({desk.uids.infra, desk.uids.desktop}) == []  # the proxy ran as the infra uid
    assert not socket_path.exists() and not desk.instance_dir.exists()
    assert str(socket_path) not in Path("/proc/net/unix").read_text()
    assert _network_state() == before


def test_a_dead_proxy_comes_back_at_the_next_reset(online, site):
    proxy = online._proxy.process
    assert proxy is not None
    proxy.kill()
    proxy.wait()
    assert sh(online, "curl -sS -m 20 http://www.site.test/").returncode != 0
    online.restart()
    plain = sh(online, "curl -sS -m 20 http://www.site.test/back")
    assert plain.output == f"site {site.token} /back\n", plain.error


def test_gym_make_network_internet_through_the_bash_channel(make_env, site, tripwire):
    network = {"mode": "internet", "hosts": {"www.site.test": f"127.0.0.1:{site.port}"}}
    env = make_env(task="os-create-file", enable_bash=True, enable_mcp=False, network=network)
    env.reset()
    bash = {"name": "bash", "arguments": {"command": "curl -sS -m 20 http://www.site.test/gym"}}
    obs, _r, _t, _tr, info = env.step(bash)
    assert obs["tool_result"] == f"[exit code 0]\nsite {site.token} /gym\n", info
    attack = (
        f"curl -sS -m 20 -w ' %{{http_code}}' -x http://127.0.0.1:{RELAY_PORT} --noproxy '' "
        f"http://127.0.0.1:{tripwire.port}/"
    )
    obs, *_ = env.step({"name": "bash", "arguments": {"command": attack}})
    assert obs["tool_result"].endswith("refused: 127.0.0.1 is not a public address\n 403")
    assert tripwire.accepted == 0


def test_gym_make_refuses_a_bad_network_before_any_desktop_starts(make_env):
    with pytest.raises(ValueError, match="network mode must be one of 'loopback', 'internet', got 'lan'"):
        make_env(task="os-create-file", network="lan")


def test_chromium_opens_the_site_the_task_names(online, site, tmp_path):
    ctx = TaskContext("chrome-online", tmp_path)
    SETUP_STEPS.get("launch")(online, ctx, command=["google-chrome"])
    SETUP_STEPS.get("chrome_open_tabs")(online, ctx, urls_to_open=["http://www.site.test/chromium"])
    active = GETTERS.get("active_tab_info")(online, ctx, {})
    assert active["url"] == "http://www.site.test/chromium"
    assert f"site {site.token} /chromium" in active["content"]
    assert any(
        path == "/chromium" and "Chrome" in headers.get("User-Agent", "") for path, headers in site.requests
    )
