"""The tool host's side of the accessibility worker: start it as the user, bound what it says, restart it.

The worker is a process of the desktop user, so anything it writes is untrusted: a reply
is one JSON line of at most :data:`MAX_REPLY_BYTES`, read under a deadline; a worker that
says more, says nothing in time, or dies is killed and the request fails with
:class:`WorkerFault` (the batch reports where it stopped). The next request starts a new
worker (each episode's reset kills every process of the user, this one included), which
continues the ref numbering, so a ref is never reused within the tool host's life.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

MAX_REPLY_BYTES = 8 << 20
START_TIMEOUT_S = 20.0


class WorkerFault(Exception):
    """The worker died, hung or answered out of bounds; it has been killed.

    Attributes:
        sent: Whether the request reached the worker (an operation may have run).
    """

    def __init__(self, message: str, *, sent: bool) -> None:
        super().__init__(message)
        self.sent = sent


def worker_argv(first_ref: int) -> list[str]:
    """The worker's command line under this interpreter (the guest's, which imports pyatspi)."""
    return [sys.executable, "-m", "osworld_mcp_env.ax.worker", "--first-ref", str(first_ref)]


class WorkerLink:
    """One supervised worker, started on first use and after each death.

    Args:
        start: Starts the worker from its argv with piped stdin/stdout (as the desktop user).
        argv: Builds the argv from the first ref number.
    """

    def __init__(
        self,
        start: Callable[[Sequence[str]], subprocess.Popen[bytes]],
        argv: Callable[[int], list[str]] = worker_argv,
    ) -> None:
        self._start = start
        self._argv = argv
        self._proc: subprocess.Popen[bytes] | None = None
        self._buffer = b""
        self._lock = threading.Lock()
        self.next_ref = 1
        self.generation = 0

    @property
    def pid(self) -> int | None:
        """The live worker's pid, None before the first request or after a death."""
        return self._proc.pid if self._proc is not None and self._proc.poll() is None else None

    def request(
        self, payload: dict[str, Any], timeout_s: float, *, generation: int | None = None
    ) -> dict[str, Any]:
        """Sends one request and returns the worker's reply object.

        Args:
            payload: The request object.
            timeout_s: How long the worker may take to answer.
            generation: The worker that the caller's earlier requests went to. If that worker
                has died since, the request fails instead of starting a new one: a batch whose
                worker was killed between two of its requests must stop, not go on against a
                worker that never saw its refs.

        Raises:
            WorkerFault: No worker could start, or it died, hung or broke the bounds.
        """
        with self._lock:
            deadline = time.monotonic() + max(0.05, timeout_s)
            if generation is not None and (generation != self.generation or self.pid is None):
                if self.pid is None:
                    self._kill()  # reaps the dead one; the next request without a generation starts anew
                raise WorkerFault("the accessibility worker died during the batch", sent=False)
            if self._proc is None or self._proc.poll() is not None:
                self._spawn(min(deadline, time.monotonic() + START_TIMEOUT_S))
            assert self._proc is not None and self._proc.stdin is not None
            try:
                self._proc.stdin.write(json.dumps(payload).encode() + b"\n")
                self._proc.stdin.flush()
            except OSError as exc:
                self._kill()
                raise WorkerFault(f"the accessibility worker is gone ({exc.strerror})", sent=False) from exc
            reply = self._read(deadline, sent=True)
            self._note_refs(reply)
            return reply

    def _spawn(self, deadline: float) -> None:
        self._kill()
        try:
            self._proc = self._start(self._argv(self.next_ref))
        except OSError as exc:
            raise WorkerFault(f"the accessibility worker could not start: {exc}", sent=False) from exc
        self.generation += 1
        self._buffer = b""
        ready = self._read(deadline, sent=False)
        if not ready.get("ready"):
            self._kill()
            raise WorkerFault("the accessibility worker did not say it was ready", sent=False)

    def _read(self, deadline: float, *, sent: bool) -> dict[str, Any]:
        proc = self._proc
        assert proc is not None and proc.stdout is not None
        fd = proc.stdout.fileno()
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                self._kill()
                raise WorkerFault(
                    "the accessibility worker did not answer in time; it was stopped", sent=sent
                )
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                self._kill()
                raise WorkerFault("the accessibility worker died", sent=sent)
            self._buffer += chunk
            if len(self._buffer) > MAX_REPLY_BYTES:
                self._kill()
                raise WorkerFault(
                    f"the accessibility worker's answer passed {MAX_REPLY_BYTES} bytes", sent=sent
                )
        line, self._buffer = self._buffer.split(b"\n", 1)
        try:
            reply = json.loads(line)
        except ValueError as exc:
            self._kill()
            raise WorkerFault("the accessibility worker's answer is not JSON", sent=sent) from exc
        if not isinstance(reply, dict) or not isinstance(reply.get("ok"), bool):
            self._kill()
            raise WorkerFault("the accessibility worker's answer has no 'ok' flag", sent=sent)
        return reply

    def _note_refs(self, reply: dict[str, Any]) -> None:
        value = reply.get("next_ref")
        if isinstance(value, int) and not isinstance(value, bool) and self.next_ref <= value < 10**9:
            self.next_ref = value

    def _kill(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=2)
        for stream in (proc.stdin, proc.stdout):
            with contextlib.suppress(OSError):
                if stream is not None:
                    stream.close()

    def close(self) -> None:
        """Stops the worker."""
        with self._lock:
            self._kill()
