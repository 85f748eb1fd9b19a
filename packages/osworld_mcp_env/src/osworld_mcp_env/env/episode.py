"""The episode's desktop: started, repaired or swapped for a prepared one, with the task set up on it.

:meth:`EpisodeDesktop.start` is everything ``reset`` does besides its bookkeeping.
The cold path restarts the used desktop (the backend's ``restart`` replaces what
does not answer) and runs the task's setup; a setup that still meets a dead desktop
replaces the whole desktop and runs once more. With ``prepare_resets`` on, a desktop
prepared for the task (:mod:`~osworld_mcp_env.env.prepared_reset`) is swapped in
instead, built by the same steps on a fresh desktop of its own.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import shutil
import tempfile
import time
from pathlib import Path

from osworld_mcp_env.backends import Desktop, make_desktop
from osworld_mcp_env.backends.base import CpuWeighted
from osworld_mcp_env.backends.local.cgroups import DEFAULT_CPU_WEIGHT
from osworld_mcp_env.env.config import EnvConfig
from osworld_mcp_env.env.prepared_reset import PreparedEpisode, Register, ResetPreparer
from osworld_mcp_env.env.tools import ToolCatalog
from osworld_mcp_env.errors import DesktopError
from osworld_mcp_env.mcp_host.apps import app_from_wm_class
from osworld_mcp_env.network import NetworkConfig
from osworld_mcp_env.tasks.bundled import materialize_bundled_files
from osworld_mcp_env.tasks.context import TaskContext, TaskRunConfig
from osworld_mcp_env.tasks.model import Task
from osworld_mcp_env.tasks.setup import run_steps

# After setup: wait until the screen and the desktop's CPU stay still for 150 ms, at most 8 s. The
# wait continues the setup: what it drew in the last 400 ms (the guest's timer horizon) counts as
# the wait's own, and only work of 2 ms of CPU or more, not an app's timer tick, extends the
# horizon (guest.settle's docstring; tools/settle_check.py --resets checks the first frames).
RESET_SETTLE = {
    "first_change_ms": 300.0,
    "quiet_ms": 150.0,
    "max_ms": 8000.0,
    "prior_change_ms": 400.0,
    "work_ms": 2.0,
}

logger = logging.getLogger(__name__)


class EpisodeDesktop:
    """The desktop, tool client and task context an env's episode runs on, and its prepared successor.

    Args:
        config: The env's settings (backend, screen, tools, caches, preparation).
    """

    def __init__(self, config: EnvConfig) -> None:
        self.config = config
        """The env's settings: ``OSWorldMCPEnv.config`` is this field (a replaced one reaches starts)."""
        self._desktop: Desktop | None = None
        self.tools: ToolCatalog | None = None
        """The desktop's MCP client; None without ``enable_mcp`` or before the first start."""
        self.context: TaskContext | None = None
        """The running task's context (its work directory); None before the first start."""
        self._work_dir = tempfile.TemporaryDirectory(prefix="osworld-env-")
        self.preparer = ResetPreparer(self._build_prepared) if config.prepare_resets else None
        """The background preparer of the next episode; None with ``prepare_resets`` off."""
        self._prepared_ids = itertools.count()
        self._cold_reset_s: float | None = None  # the last cold start's, for the preparer's choice

    @property
    def desktop(self) -> Desktop:
        """The running desktop (started by the first :meth:`start`)."""
        if self._desktop is None:
            raise DesktopError("The desktop is not running; call reset() first.")
        return self._desktop

    def start(self, task: Task) -> tuple[dict[str, float], str]:
        """Brings up a clean desktop with ``task``'s setup run on it.

        Returns:
            The start's timings (``prepared_ms``, or ``desktop_ms`` and ``setup_ms``),
            and why the desktop was replaced and set up again (empty when it was not).

        Raises:
            DesktopError: The desktop cannot start, or its replacement's setup failed too.
        """
        prepared, why_not = (
            self.preparer.take(task, cold_s=self._cold_reset_s) if self.preparer else (None, "")
        )
        if prepared is not None:
            return self._swap_in(prepared), ""
        if why_not:
            logger.info("reset to %s takes the cold path: %s", task.id, why_not)
        try:
            return self._cold_start(task, replace_desktop=False), ""
        except DesktopError as exc:
            recovered = f"{type(exc).__name__}: {exc}"
            return self._cold_start(task, replace_desktop=True), recovered

    def prepare(self, task: Task) -> None:
        """Starts preparing ``task``'s next episode in the background (``prepare_resets`` on)."""
        assert self.preparer is not None
        self._cache_roots()  # made here, on this thread, not by the build on its worker
        self.preparer.prepare(task)

    def close(self) -> None:
        """Stops the desktop (and a prepared one); no process or temporary directory remains."""
        if self.preparer is not None:
            self.preparer.close()
        self._close_tools()
        if self._desktop is not None:
            self._desktop.close()
            self._desktop = None
        self._work_dir.cleanup()

    def _cache_roots(self) -> tuple[Path, ...]:
        """The user's cache directories, then the bundled tasks' generated files."""
        bundled = Path(self._work_dir.name) / "bundled-cache"
        if not bundled.exists():
            materialize_bundled_files(bundled)
        return (*(Path(p) for p in self.config.cache_dirs), bundled)

    def _cold_start(self, task: Task, *, replace_desktop: bool) -> dict[str, float]:
        """Brings up a clean desktop and its tool client, then runs the task's setup."""
        started = time.perf_counter()
        self._start_or_restart_desktop(replace=replace_desktop)
        desktop_ms = (time.perf_counter() - started) * 1000
        self.context = self._new_context(task, Path(self._work_dir.name))
        self._set_up(task, self.desktop, self.context)
        setup_ms = (time.perf_counter() - started) * 1000 - desktop_ms
        self._cold_reset_s = (desktop_ms + setup_ms) / 1000
        return {"desktop_ms": desktop_ms, "setup_ms": setup_ms}

    def _new_context(self, task: Task, root: Path) -> TaskContext:
        return TaskContext(
            task_id=task.id,
            work_dir=root / task.id,
            config=TaskRunConfig(cache_roots=self._cache_roots(), max_sleep_s=self.config.max_sleep_s),
            task_dir=task.origin.parent if task.origin else None,
        )

    @staticmethod
    def _set_up(task: Task, desktop: Desktop, context: TaskContext) -> None:
        # Files the last episode of this task copied out (its result) must not reach this one's evaluation.
        shutil.rmtree(context.work_dir, ignore_errors=True)
        context.work_dir.mkdir(parents=True)
        run_steps(task.config, desktop, context, phase="setup")
        # A window is mapped before its document is drawn: the first frame must show the task.
        desktop.settle(**RESET_SETTLE)

    def _build_prepared(self, task: Task, register: Register) -> PreparedEpisode:
        """The cold start's steps on a new desktop of its own (on the preparer's thread)."""
        desktop = self._make_desktop()
        register(desktop)
        if isinstance(desktop, CpuWeighted):
            desktop.set_cpu_weight(self.config.preparing_cpu_weight)  # the running episode comes first
        context = self._new_context(task, Path(self._work_dir.name) / f"prepared-{next(self._prepared_ids)}")
        self._set_up(task, desktop, context)
        socket = desktop.tool_socket() if self.config.enable_mcp else None
        tools = None
        if socket is not None:
            tools = ToolCatalog(socket, desktop, ax_tools=self.config.ax_tools)
            register(tools)
            # The first observation lists the focused app's tools: list them now. A host
            # that does not answer yet shows as the observation's tools_error, as cold.
            with contextlib.suppress(DesktopError):
                active = desktop.active_window()
                tools.for_app(app_from_wm_class(active.wm_class) if active else "")
        return PreparedEpisode(task, desktop, context, tools)

    def _swap_in(self, prepared: PreparedEpisode) -> dict[str, float]:
        """Makes the prepared desktop the episode's; the used one is closed in the background, not reused."""
        assert self.preparer is not None
        started = time.perf_counter()
        used_desktop, used_tools, used_context = self._desktop, self.tools, self.context
        if isinstance(prepared.desktop, CpuWeighted):
            prepared.desktop.set_cpu_weight(DEFAULT_CPU_WEIGHT)
        self._desktop, self.tools, self.context = prepared.desktop, prepared.tools, prepared.context
        self.preparer.recycle(used_tools, used_desktop)
        if used_context is not None:
            shutil.rmtree(used_context.work_dir, ignore_errors=True)
        return {"prepared_ms": (time.perf_counter() - started) * 1000}

    def _start_or_restart_desktop(self, *, replace: bool) -> None:
        """Starts the desktop, restarts it, or (``replace``) swaps it for a new one."""
        if self._desktop is not None and replace:
            self._close_tools()
            self._desktop.close()
            self._desktop = None
        if self._desktop is None:
            self._desktop = self._make_desktop()
        else:
            self._desktop.restart()
        socket = self._desktop.tool_socket() if self.config.enable_mcp else None
        # A restart that replaced the sandbox also replaced the tool host: the old
        # client's sessions are dead, so the tools reconnect through a new one.
        if self.tools is not None and not self.tools.serves(socket, self._desktop):
            self._close_tools()
        if socket is not None and self.tools is None:
            self.tools = ToolCatalog(socket, self._desktop, ax_tools=self.config.ax_tools)

    def _make_desktop(self) -> Desktop:
        network = NetworkConfig.parse(self.config.network)
        return make_desktop(
            self.config.backend,
            screen_width=self.config.screen_width,
            screen_height=self.config.screen_height,
            enable_mcp=self.config.enable_mcp,
            **({"network": network} if network.internet else {}),  # backends without one keep working
            **self.config.backend_options,
        )

    def _close_tools(self) -> None:
        if self.tools is not None:
            self.tools.close()
            self.tools = None


__all__ = ["RESET_SETTLE", "EpisodeDesktop"]
