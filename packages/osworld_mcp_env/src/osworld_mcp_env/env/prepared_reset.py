"""Prepared resets: the next episode's desktop, set up in the background on a sandbox no agent touched.

Reusing an app the last agent ran cannot be proven pristine (a desktop user can run
code inside a reused LibreOffice through UNO), so the fast reset here reuses nothing
an agent reached. While episode N runs, a *second* desktop is made from scratch (its
own slot, host uids, PID and network namespaces and tmpfs places), the next task's
setup runs on it, and its tool client is connected. ``reset`` to that task then swaps
the desktops, and the used one is closed in the background (never reused). Why the
agent of episode N cannot reach the prepared desktop: ``docs/security.md``, "Prepared
resets".

The preparer holds at most one preparation. A reset to another task, a preparation
that failed or did not finish in time, and a prepared desktop that no longer answers
are discarded, and the env takes its cold path; nothing here raises out of ``reset``.
A fresh desktop costs about twice a cold reset (a new sandbox, then the same setup),
so a reset waits for a preparation under way only while it should finish sooner
than a cold reset would.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from osworld_mcp_env.backends.base import Desktop
from osworld_mcp_env.deadline import deadline
from osworld_mcp_env.env.tools import ToolCatalog
from osworld_mcp_env.errors import DesktopError
from osworld_mcp_env.tasks.context import TaskContext
from osworld_mcp_env.tasks.model import Task

logger = logging.getLogger(__name__)

# The longest a reset waits for a preparation under way (setup steps carry their own
# timeouts: an ``open`` waits 30 s for its window).
PREPARED_WAIT_S = 120.0
# A prepared desktop that does not list its windows within this is hung: the cold path.
ALIVE_CHECK_S = 10.0
# Memory one more desktop per env needs, with room to spare: an embedded desktop with
# LibreOffice holds 0.4-0.7 GB (DESIGN.md, "Targets").
PREPARED_DESKTOP_MB = 1024


class Closeable(Protocol):
    """What a preparation makes and must close when it is discarded: a desktop, a tool client."""

    def close(self) -> None:
        """Releases it; safe to call twice."""
        ...


@dataclass
class PreparedEpisode:
    """A desktop on which a task's setup has run, ready to be the next episode's.

    Attributes:
        task: The task whose setup ran.
        desktop: The desktop, never seen by an agent.
        context: The task run's context (its own work directory).
        tools: The desktop's MCP tool client, its catalog listed; None without tools.
    """

    task: Task
    desktop: Desktop
    context: TaskContext
    tools: ToolCatalog | None

    def close(self) -> None:
        """Closes the tool client, then the desktop."""
        if self.tools is not None:
            self.tools.close()
        self.desktop.close()


Register = Callable[[Closeable], None]
"""Called by a build with each resource as soon as it exists, so a discard can close it mid-build."""
Build = Callable[[Task, Register], PreparedEpisode]
"""Makes a fresh desktop and runs ``task``'s setup on it (the env's own cold-start steps)."""


class PreparationCancelled(Exception):
    """The preparation was discarded while it was being built."""


@dataclass
class _Job:
    task: Task
    started: float = field(default_factory=time.monotonic)
    future: concurrent.futures.Future[PreparedEpisode] | None = None
    made: list[Closeable] = field(default_factory=list)
    cancelled: bool = False


class ResetPreparer:
    """Prepares at most one next episode in the background and hands it to ``reset``.

    Args:
        build: Makes the desktop and runs the setup (called on a worker thread).
        wait_s: How long :meth:`take` waits for a preparation still under way.
    """

    def __init__(self, build: Build, *, wait_s: float = PREPARED_WAIT_S) -> None:
        self._build = build
        self._wait_s = wait_s
        self._lock = threading.Lock()
        self._job: _Job | None = None
        self._last_build_s: float | None = None  # the last successful preparation's duration
        # One preparation at a time; closing runs apart so that it never delays one.
        self._worker = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="prepare-reset")
        self._closer = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="recycle-desktop")

    @property
    def task(self) -> Task | None:
        """The task being prepared or prepared, or None."""
        return self._job.task if self._job is not None else None

    def prepare(self, task: Task) -> None:
        """Starts preparing ``task``; one prepared (or under way) for it is kept, any other discarded."""
        if self._job is not None and self._job.task == task:
            return
        self.discard()
        job = _Job(task)
        job.future = self._worker.submit(self._run, job)
        self._job = job

    def take(self, task: Task, *, cold_s: float | None = None) -> tuple[PreparedEpisode | None, str]:
        """The prepared episode of ``task``, waiting for one under way; else None and why not.

        The reason is empty when nothing was prepared. The preparation is handed over
        (or discarded) either way: the next reset needs a new :meth:`prepare`.

        Args:
            task: The task the reset starts.
            cold_s: What a cold reset takes here (the env's last one). A preparation
                under way that, by the last one's duration, needs longer than this is
                discarded; None: wait for it.
        """
        job, self._job = self._job, None
        if job is None or job.future is None:
            return None, ""
        if job.task != task:
            self._retire(job)
            return None, f"prepared for task {job.task.id!r}, not {task.id!r}"
        if not job.future.done() and cold_s is not None and self._last_build_s is not None:
            left = self._last_build_s - (time.monotonic() - job.started)
            if left > cold_s:
                self._retire(job)
                return None, f"the preparation needs ~{left:.1f} s more, a cold reset ~{cold_s:.1f} s"
        try:
            prepared = job.future.result(timeout=self._wait_s)
        except concurrent.futures.TimeoutError:
            self._retire(job)
            return None, f"the preparation did not finish within {self._wait_s:g} s"
        except Exception as exc:  # any failure of the preparation means the cold path, not an error
            self._retire(job)
            return None, f"the preparation failed: {type(exc).__name__}: {exc}"
        try:
            with deadline(ALIVE_CHECK_S):
                prepared.desktop.windows()  # a desktop that died while it waited does not answer
        except DesktopError as exc:
            self.recycle(prepared)
            return None, f"the prepared desktop does not answer: {exc}"
        return prepared, ""

    def ready(self, timeout_s: float) -> PreparedEpisode | None:
        """Waits for the current preparation; returns it (still held for the next reset) or None.

        None when nothing is prepared, the preparation failed or it did not finish in time.
        For schedulers that want the swap's time only, and for tests.
        """
        job = self._job
        if job is None or job.future is None:
            return None
        try:
            return job.future.result(timeout=timeout_s)
        except Exception:  # failed or not done: the next reset takes the cold path and says why
            return None

    def discard(self) -> None:
        """Drops the current preparation; its desktop is closed in the background."""
        job, self._job = self._job, None
        if job is not None:
            self._retire(job)

    def recycle(self, *resources: Closeable | None) -> None:
        """Closes used resources (the last episode's desktop and tools) in the background."""
        for resource in resources:
            if resource is not None:
                self._closer.submit(_close_quietly, resource)

    def close(self) -> None:
        """Discards the preparation and returns once everything it made is closed."""
        self.discard()
        self._worker.shutdown(wait=True)
        self._closer.shutdown(wait=True)

    def _run(self, job: _Job) -> PreparedEpisode:
        def register(resource: Closeable) -> None:
            with self._lock:
                job.made.append(resource)
                if job.cancelled:
                    raise PreparationCancelled(f"task {job.task.id!r}")

        if job.cancelled:
            raise PreparationCancelled(f"task {job.task.id!r}")
        try:
            prepared = self._build(job.task, register)
            self._last_build_s = time.monotonic() - job.started
            return prepared
        except BaseException:
            with self._lock:
                made = list(job.made)
            for resource in reversed(made):
                _close_quietly(resource)
            raise

    def _retire(self, job: _Job) -> None:
        with self._lock:
            job.cancelled = True
            made = list(job.made)
        # Closing the desktop now makes a setup still running on it fail at once.
        self.recycle(*reversed(made))
        if job.future is not None:
            self._closer.submit(_close_when_done, job.future)


def _close_when_done(future: concurrent.futures.Future[PreparedEpisode]) -> None:
    with contextlib.suppress(Exception):  # a failed preparation closed what it made itself
        _close_quietly(future.result())


def _close_quietly(resource: Closeable) -> None:
    """Closes in the background, where an exception would reach no one: it is logged."""
    try:
        resource.close()
    except Exception:
        logger.exception("closing %r in the background failed", resource)


__all__ = ["PREPARED_WAIT_S", "Build", "PreparedEpisode", "Register", "ResetPreparer"]


def prepared_resets_fit(envs: int, *, meminfo: Path = Path("/proc/meminfo")) -> bool:
    """Whether the host has the memory for one prepared desktop per env (``MemAvailable``).

    False where the kernel does not say (no ``/proc/meminfo``): the cold path needs no more memory.
    """
    try:
        lines = meminfo.read_text().splitlines()
        available_kb = next(int(line.split()[1]) for line in lines if line.startswith("MemAvailable:"))
    except (OSError, StopIteration, IndexError, ValueError):
        return False
    return available_kb // 1024 >= envs * PREPARED_DESKTOP_MB


def with_prepared_resets(env_kwargs: Mapping[str, Any], envs: int) -> dict[str, Any]:
    """``env_kwargs`` with prepared resets on where memory allows them, unless they name ``prepare_resets``.

    The eval runner and the trainer make their envs through this: a warm reset costs ~19 ms
    against a cold one's seconds, and the cold path stays the fallback of every reset.
    """
    if "prepare_resets" in env_kwargs:
        return dict(env_kwargs)
    return {**env_kwargs, "prepare_resets": prepared_resets_fit(envs)}
