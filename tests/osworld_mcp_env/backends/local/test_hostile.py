"""A hostile desktop user against the sandbox: every attack here must fail.

The agent is modelled by commands run as the desktop user (the bash channel and
the terminal have exactly these rights). Each test is an attack the issue found
working before the trust boundary, plus the property that stops it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest
from osworld_mcp_env.backends.local.cgroups import CGROUP_ROOT
from osworld_mcp_env.backends.local.desktop import PACKAGE_DIR, LocalDesktop, LocalDesktopConfig
from osworld_mcp_env.backends.local.framebuffer import SCREEN_FILE
from polling import wait_until

pytestmark = [pytest.mark.desktop, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[4]


@pytest.fixture(scope="module")
def desktop():
    desk = LocalDesktop(LocalDesktopConfig(home_mb=64, tmp_mb=32, shm_mb=32, max_tasks=512))
    yield desk
    desk.close()


def sh(desktop: LocalDesktop, script: str, timeout: float = 60.0):
    return desktop.execute(script, shell=True, timeout=timeout)


def real_uids(pids: list[int]) -> dict[int, int]:
    uids = {}
    for pid in pids:
        with contextlib.suppress(FileNotFoundError):
            uids[pid] = os.stat(f"/proc/{pid}").st_uid
    return uids


def user_pids(desktop: LocalDesktop) -> set[int]:
    return {pid for pid, uid in real_uids(desktop.processes()).items() if uid == desktop.uids.desktop}


def infra_pid(desktop: LocalDesktop, comm: str) -> int:
    """The in-sandbox pid (as the user sees it) of an infrastructure process."""
    out = sh(desktop, f"pgrep -x {comm}").output.split()
    assert out, f"no {comm} inside the desktop"
    return int(out[0])


def test_infrastructure_and_user_have_different_host_uids(desktop):
    uids = real_uids(desktop.processes())
    assert desktop.uids.infra != desktop.uids.desktop
    assert set(uids.values()) <= {desktop.uids.infra, desktop.uids.desktop}
    assert sh(desktop, "id -u").output.strip() == "1000"
    assert sh(desktop, "grep CapEff /proc/self/status").output.split()[1] == "0000000000000000"


def test_truncating_the_framebuffer_is_refused(desktop):
    attack = sh(desktop, f"truncate -s 0 /run/fb/{SCREEN_FILE}; ls /run/fb")
    assert attack.returncode != 0 and "Permission denied" in attack.error
    assert desktop.screenshot().pixels.shape == (1080, 1920, 3)


def test_the_guest_socket_cannot_be_replaced_and_its_servers_cannot_be_signalled(desktop):
    attack = sh(desktop, "mv /run/ctl/guest.sock /run/ctl/x || ls /run/ctl || touch /run/ctl/guest2.sock")
    assert attack.returncode != 0 and "Permission denied" in attack.error
    for comm in ("Xvfb", "openbox", "python"):
        pid = infra_pid(desktop, comm)
        for probe in (
            f"kill -STOP {pid}",
            f"kill -9 {pid}",
            f"cat /proc/{pid}/environ",
            f"head -c1 /proc/{pid}/mem",
        ):
            done = sh(desktop, probe)
            assert done.returncode != 0, f"{probe} worked against {comm}"
    assert desktop.client.health()


def test_the_token_is_not_in_any_command_line(desktop):
    token = desktop._token
    pids = [*desktop.processes(), desktop._sandbox.process.pid]
    for pid in pids:
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            environ = Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:
            continue
        assert token.encode() not in cmdline and token.encode() not in environ
    assert token not in sh(desktop, "env; cat /run/ctl/token").output


def test_no_process_of_the_user_survives_reset(desktop):
    script = textwrap.dedent(
        """
        setsid sh -c 'while :; do sleep 1; done' </dev/null >/dev/null 2>&1 &
        nohup sh -c 'trap "" TERM HUP; while :; do sleep 0.2 & wait; done' </dev/null >/dev/null 2>&1 &
        (sh -c 'while :; do (sleep 30 &) ; sleep 0.01; done' &) </dev/null >/dev/null 2>&1
        unshare -Urpf --mount-proc sleep 1000 </dev/null >/dev/null 2>&1 &
        sleep 0.3
        """
    )
    sh(desktop, script)
    before = user_pids(desktop)
    assert len(before) >= 5
    generation = desktop.generation
    desktop.restart()
    assert desktop.generation == generation
    survivors = before & user_pids(desktop)
    assert not survivors, f"survived reset: {survivors}"
    assert sh(desktop, "pgrep -c -x sleep").output.strip() == "0"


def infra_processes(desktop: LocalDesktop) -> dict[int, str]:
    found = {}
    for pid, uid in real_uids(desktop.processes()).items():
        if uid == desktop.uids.infra:
            with contextlib.suppress(FileNotFoundError):
                found[pid] = Path(f"/proc/{pid}/comm").read_text().strip()
    return found


def gui(desktop: LocalDesktop, action: str, **arguments):
    return desktop.gui({"action": action, "arguments": arguments})


def test_the_window_manager_starts_no_program_for_the_agent(desktop):
    """Openbox runs as the infrastructure uid; its stock root menu ("Terminal emulator",
    opened by a right click on the desktop) gave two GUI actions a shell as that uid."""
    desktop.restart()  # no window of the user: the click lands on the root window
    assert "root-menu" not in (desktop.ctl_dir / "openbox-rc.xml").read_text()
    infra_before = infra_processes(desktop)
    gui(desktop, "mouse_move", coordinate=[900, 500])
    before = desktop.screenshot().pixels.copy()
    gui(desktop, "right_click", coordinate=[900, 500])  # returns once the screen has settled
    changed = int((desktop.screenshot().pixels != before).any(axis=2).sum())
    assert changed == 0, f"a menu opened on the desktop ({changed} pixels changed)"
    gui(desktop, "left_click", coordinate=[940, 508])  # where the stock menu's first item was
    # Openbox handles input in order: once the shortcut's terminal is up, the click before it
    # has been handled too, so any program it started would be running now.
    gui(desktop, "key", keys=["ctrl", "alt", "t"])
    wait_until(
        lambda: sh(desktop, "pgrep -u 1000 -x xfce4-terminal").returncode == 0,
        what="the Ctrl+Alt+T terminal as the desktop user",
    )
    started = set(infra_processes(desktop).items()) - set(infra_before.items())
    assert not started, f"started as the infrastructure uid: {started}"


def test_symlinks_planted_in_home_do_not_reach_the_host(desktop, tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("host data\n")
    os.chmod(victim, 0o600)
    created = tmp_path / "created-by-host"
    script = (
        f"rm -rf ~/.Xauthority ~/.config ~/Desktop; ln -s {victim} ~/.Xauthority; "
        f"ln -s {tmp_path} ~/.config; ln -s {created} ~/Desktop; ls -la ~"
    )
    sh(desktop, script)
    desktop.restart()
    assert victim.read_text() == "host data\n" and victim.stat().st_uid == 0
    assert not created.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["victim"]
    after = sh(desktop, "stat -c '%F %U' ~/.Xauthority ~/.config ~/Desktop").output.splitlines()
    assert after == ["regular empty file user", "directory user", "directory user"]


def test_host_files_are_invisible_gold_files_included(desktop):
    bundled = PACKAGE_DIR / "tasks" / "bundled"
    gold = next(bundled.glob("*.json"))
    assert gold.is_file()  # on the host
    for path in (gold, REPO / "tests", REPO / "README.md", Path("/work/shared"), Path("/root/.bashrc")):
        assert sh(desktop, f"test -e {path} && echo VISIBLE").output == "", path
    assert sh(desktop, "ls -A /home").output.split() == ["user"]
    assert sh(desktop, f"ls {bundled}").output.strip() == ""


def test_disk_writes_are_capped_and_stay_off_the_host_disk(desktop):
    before = shutil.disk_usage(desktop.instance_dir).used
    for place, cap_mb in (("/home/user", 64), ("/tmp", 32), ("/dev/shm", 32)):
        done = sh(
            desktop, f"dd if=/dev/zero of={place}/fill bs=1M count={cap_mb + 16} 2>&1; rm -f {place}/fill"
        )
        assert "No space left on device" in done.output, place
    assert sh(desktop, "dd if=/dev/zero of=/run/ctl/fill bs=1M count=1 2>&1").returncode != 0
    # The host's disk did not take the 128 MB (another workload may write a little meanwhile).
    assert shutil.disk_usage(desktop.instance_dir).used - before < 64 * 2**20
    assert sum(f.stat().st_size for f in desktop.instance_dir.rglob("*") if f.is_file()) < 2**20


def test_a_fork_bomb_is_bounded_and_gone_after_reset(desktop):
    sh(desktop, "(bomb() { bomb | bomb & }; bomb) >/dev/null 2>&1 </dev/null &", timeout=30)
    peak = 0
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        peak = max(peak, len(user_pids(desktop)))
        time.sleep(0.1)
    assert 0 < peak <= 512
    generation = desktop.generation
    desktop.restart()
    assert desktop.generation == generation  # the fast reset coped; no new sandbox was needed
    assert not user_pids(desktop) - {infra for infra in user_pids(desktop) if _comm(infra) == "dbus-daemon"}
    assert sh(desktop, "echo alive").output.strip() == "alive"


def test_nested_user_namespaces_are_capped(desktop):
    script = "for i in $(seq 40); do unshare -U sleep 60 2>/dev/null & done; sleep 1; pgrep -c -x sleep"
    running = int(sh(desktop, script).output.split()[-1])
    assert 0 < running <= 32  # max_user_namespaces; Chromium's sandbox needs a few
    desktop.restart()


def test_user_site_packages_do_not_run_in_the_desktops_python(desktop):
    site = "~/.local/lib/python3.11/site-packages"
    sh(desktop, f"mkdir -p {site} && echo 'import sys; sys.stdout.write(\"INJECTED\")' > {site}/evil.pth")
    for python in ("python3", desktop.config.guest_python):
        assert "INJECTED" not in desktop.execute([python, "-c", "print('clean')"]).output


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def test_reset_clears_everything_the_user_could_write(desktop):
    script = (
        "touch /tmp/t /dev/shm/s /run/user/1000/r /var/tmp/v ~/h; "
        "python3 -c 'import sysv_ipc' 2>/dev/null; "
        "xprop -root -f HOSTILE_MARK 8s -set HOSTILE_MARK planted; xmodmap -e 'keycode 38 = z'; "
        "ls /tmp/t /dev/shm/s /run/user/1000/r /var/tmp/v ~/h"
    )
    assert sh(desktop, script).returncode == 0
    assert "HOSTILE_MARK" in sh(desktop, "xprop -root").output
    desktop.restart()
    after = sh(
        desktop, "ls /tmp/t /dev/shm/s /run/user/1000/r /var/tmp/v ~/h 2>&1; xprop -root; xmodmap -pke"
    )
    assert after.output.count("No such file") == 5
    assert "HOSTILE_MARK" not in after.output
    assert "keycode  38 = a A" in after.output


def test_result_files_are_read_as_the_user_with_a_size_cap(desktop):
    sh(
        desktop,
        "ln -sf /run/ctl/token ~/result.xlsx; ln -sf /proc/self/environ ~/env.xlsx; mkfifo ~/fifo.xlsx",
    )
    assert desktop.read_file("/home/user/result.xlsx") is None
    assert desktop.read_file("/home/user/fifo.xlsx") is None
    from osworld_mcp_env.errors import GuestRequestError

    try:  # the server's own environment is neither readable by the user nor a document
        assert desktop.read_file("/home/user/env.xlsx") is None
    except GuestRequestError as refused:
        assert refused.status == 403
    sh(desktop, "truncate -s 200M ~/huge.bin")  # sparse: passes the 64 MB home cap
    with pytest.raises(GuestRequestError) as caught:
        desktop.read_file("/home/user/huge.bin")
    assert caught.value.status == 413


def test_memory_is_bounded_where_the_host_has_cgroups(tmp_path):
    if not any((CGROUP_ROOT / c).is_dir() for c in ("memory", "cgroup.controllers")):
        pytest.skip("no cgroup memory controller on this host")
    desk = LocalDesktop(LocalDesktopConfig(memory_mb=384, libreoffice_template=False))
    try:
        assert desk.cgroup.active
        done = desk.execute(
            ["python3", "-c", "b = bytearray(600 * 2**20); b[::4096] = b'x' * len(b[::4096])"]
        )
        assert done.returncode != 0  # killed by the OOM killer of its own cgroup, not the host
        assert desk.client.health() or desk.restart() is None
    finally:
        desk.close()
    assert not any(g.name == desk.instance_dir.name for g in (CGROUP_ROOT / "memory").rglob("desk*"))


@pytest.fixture
def open_root(tmp_path):
    """A root directory whose parents the sandbox uids can enter (pytest's tmp_path is 0700)."""
    root = Path(tempfile.mkdtemp(prefix="osworld-test-", dir="/tmp"))
    os.chmod(root, 0o711)
    yield root
    shutil.rmtree(root, ignore_errors=True)


def test_two_root_dirs_never_share_uids(open_root):
    first = LocalDesktop(LocalDesktopConfig(root_dir=open_root / "a", libreoffice_template=False))
    try:
        second = LocalDesktop(LocalDesktopConfig(root_dir=open_root / "b", libreoffice_template=False))
        try:
            assert {first.uids.infra, first.uids.desktop}.isdisjoint({second.uids.infra, second.uids.desktop})
        finally:
            second.close()
    finally:
        first.close()


def test_leftovers_of_a_killed_host_are_swept(open_root):
    tmp_path = open_root
    script = textwrap.dedent(
        f"""
        import json, sys
        from pathlib import Path
        from osworld_mcp_env.backends.local.desktop import LocalDesktop, LocalDesktopConfig
        d = LocalDesktop(LocalDesktopConfig(root_dir=Path({str(tmp_path)!r}), libreoffice_template=False))
        print(json.dumps({{"dir": str(d.instance_dir), "fb": str(d.fb_dir)}}), flush=True)
        sys.stdin.read()
        """
    )
    child = subprocess.Popen(
        [sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    line = child.stdout.readline()
    dirs = json.loads(line)
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert Path(dirs["dir"]).exists()
    fresh = LocalDesktop(LocalDesktopConfig(root_dir=tmp_path, libreoffice_template=False))
    try:
        assert not Path(dirs["dir"]).exists() and not Path(dirs["fb"]).exists()
    finally:
        fresh.close()


def test_reset_empties_the_hosts_copy_of_the_last_result(make_env):
    env = make_env(task="os-create-file", enable_mcp=False)
    env.reset()
    stale = env.unwrapped._episode.context.work_dir / "result.txt"
    stale.write_text("the previous episode's answer")
    env.reset()
    assert not stale.exists()
