"""Starting and stopping the host proxy of one internet desktop.

The proxy runs as its own process under the desktop's infrastructure uid, not as a
thread of the env: it parses what a hostile desktop sends, so a fault in it stays
in an unprivileged process of that desktop, which ``close()`` kills. Its stdin is a
pipe the host keeps open; a host killed with SIGKILL closes it, and the proxy exits.
"""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from osworld_mcp_env.errors import DesktopStartError
from osworld_mcp_env.network.config import NetworkConfig


@dataclass
class HostProxy:
    """The handle of one proxy process; empty until :meth:`start`, so a finalizer can hold it."""

    process: subprocess.Popen | None = None
    socket_path: Path | None = None
    _log: Path | None = None

    def spawn(self, config: NetworkConfig, socket_path: Path, *, uid: int, log: Path) -> None:
        """Starts the proxy on ``socket_path``; :meth:`wait_ready` waits for it to listen.

        Apart, so that the proxy's start (~0.4 s, mostly imports) overlaps the sandbox's.
        """
        socket_path.unlink(missing_ok=True)
        with open(log, "ab") as log_file:
            process = subprocess.Popen(
                [sys.executable, "-I", "-m", "osworld_mcp_env.network.proxy", "--socket", str(socket_path)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log_file,
                user=uid,
                group=uid,
                extra_groups=[],
                cwd="/",
                env={"PATH": "/usr/bin:/bin"},
            )
        self.process, self.socket_path, self._log = process, socket_path, log
        assert process.stdin is not None  # a pipe
        process.stdin.write(config.to_json().encode() + b"\n")
        process.stdin.flush()

    def wait_ready(self, timeout: float = 10.0) -> None:
        """Returns once the spawned proxy listens.

        Raises:
            DesktopStartError: It exited or did not listen within ``timeout``.
        """
        if self.process is None or not _read_ready(self.process, timeout):
            log = self._log
            tail = log.read_bytes()[-400:].decode("utf-8", "replace") if log and log.exists() else ""
            self.stop()
            raise DesktopStartError(f"The desktop's network proxy did not start: {tail or 'no output'}")

    @property
    def running(self) -> bool:
        """True while the proxy process lives."""
        return self.process is not None and self.process.poll() is None

    def stop(self) -> None:
        """Ends the proxy and removes its socket; safe to call twice."""
        process, self.process = self.process, None
        if process is not None:
            if process.stdin is not None:
                with contextlib.suppress(OSError):
                    process.stdin.close()  # EOF: the proxy's own way out
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            if process.stdout is not None:
                process.stdout.close()
        if self.socket_path is not None:
            self.socket_path.unlink(missing_ok=True)
            self.socket_path = None


def _read_ready(process: subprocess.Popen, timeout: float) -> bool:
    """Waits for the proxy's ``ready`` line."""
    assert process.stdout is not None
    fd = process.stdout.fileno()
    deadline = time.monotonic() + timeout
    buffer = b""
    while time.monotonic() < deadline:
        readable, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        if not readable:
            break
        chunk = os.read(fd, 64)
        if not chunk:
            return False
        buffer += chunk
        if b"ready\n" in buffer:
            return True
    return False
