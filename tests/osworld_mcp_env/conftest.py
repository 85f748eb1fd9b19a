"""Fixtures for the env tests: desktop tests skip (not fail) where the desktop cannot run.

With ``OSWORLD_REQUIRE_DESKTOP=1`` (CI's ``.ci/run`` sets it) they fail instead: a CI
machine that cannot start the desktop must not pass by skipping every desktop test
(tests/conftest.py skips or refuses the marked tests at collection).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import gymnasium as gym
import pytest
from desktop_support import REQUIRE_DESKTOP
from libvirt_support import REPO, SLOW_S, daemon_pids, libvirt_missing
from mcp_sandbox import Sandbox, start_sandbox
from osworld_mcp_env.backends.local.desktop import LocalDesktop
from osworld_mcp_env.errors import DesktopStartError


@pytest.fixture
def make_env() -> Iterator[Callable[..., gym.Env]]:
    """Builds envs with ``gym.make`` and closes every one of them after the test."""
    envs: list[gym.Env] = []

    def factory(**kwargs) -> gym.Env:
        env = gym.make("osworld_mcp_env:OSWorldMCP-v0", **kwargs)
        envs.append(env)
        return env

    yield factory
    for env in envs:
        env.close()


@pytest.fixture(scope="module")
def desktop() -> Iterator[LocalDesktop]:
    """One embedded desktop per test module, with the default config; skips where it cannot start."""
    try:
        local = LocalDesktop()
    except DesktopStartError as exc:
        if REQUIRE_DESKTOP:
            pytest.fail(f"OSWORLD_REQUIRE_DESKTOP=1 and the embedded desktop did not start: {exc}")
        pytest.skip(f"no embedded desktop here: {exc}")
    try:
        yield local
    finally:
        local.close()


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    """One sandboxed desktop with its MCP tool host per test module (see mcp_sandbox.py)."""
    box = start_sandbox(screen_width=1280, screen_height=800)
    try:
        yield box
    finally:
        box.client.close()
        box.desktop.close()


@pytest.fixture(scope="session")
def vm_image() -> Path:
    """The VM image: ``$OSWORLD_VM_IMAGE``, else built by tools/build-image (or reused from its cache)."""
    reason = libvirt_missing()
    if reason:
        pytest.skip(f"libvirt backend unavailable: {reason}")
    if os.environ.get("OSWORLD_VM_IMAGE"):
        return Path(os.environ["OSWORLD_VM_IMAGE"])
    done = subprocess.run(
        [str(REPO / ".venv" / "bin" / "python"), str(REPO / "tools" / "build-image")],
        capture_output=True,
        text=True,
        timeout=SLOW_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return Path(done.stdout.split()[-1])


@pytest.fixture(scope="session")
def libvirt_daemon(vm_image: Path) -> Iterator[str]:
    """A libvirtd to talk to; the one this session started is stopped at its end."""
    before = set(daemon_pids())
    subprocess.run(["bash", str(REPO / "tools" / "image" / "start-libvirtd")], check=True, timeout=300)
    started = set(daemon_pids()) - before
    yield "qemu:///system"
    # libvirtd can hang on SIGTERM after removing its socket; a daemon still there a minute
    # later is killed, so no session leaves one behind.
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in set(daemon_pids()) & started:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + 60
        while set(daemon_pids()) & started and time.monotonic() < deadline:
            time.sleep(0.1)
    assert not set(daemon_pids()) & started, f"libvirtd {started} outlived SIGKILL"


@pytest.fixture
def xvfb(tmp_path: Path) -> Iterator[subprocess.Popen]:
    """A private Xvfb with its screen file in ``tmp_path``; its display name is in ``.args[-1]``."""
    read, write = os.pipe()
    server = subprocess.Popen(
        [
            "Xvfb",
            "-displayfd",
            str(write),
            "-screen",
            "0",
            "320x200x24",
            "-nolisten",
            "tcp",
            "-fbdir",
            str(tmp_path),
        ],
        pass_fds=(write,),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    os.close(write)
    with os.fdopen(read) as announced:
        number = announced.readline().strip()  # written once the server accepts clients
    server.args.append(f":{number}")
    try:
        yield server
    finally:
        server.kill()
        server.wait()
