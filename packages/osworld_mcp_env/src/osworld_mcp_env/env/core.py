"""``OSWorldMCPEnv``: a real desktop, OSWorld tasks and a hybrid action space behind Gymnasium.

Agent mistakes never raise out of :meth:`OSWorldMCPEnv.step`: malformed JSON, an
unknown action or tool, bad arguments, off-screen coordinates, an oversize
payload, a hung app: each becomes ``info["error"] = {"code", "message", ...}``
and an ``Error [...]`` line in ``obs["tool_result"]``, nothing is dispatched on a
validation error, and the episode goes on. Desktop faults are values too: a
dead X server, guest server, window manager or tool host gives ``desktop_error``,
a hung one ``timeout`` once the step's deadline (``step_timeout_s``) passes, and
the next ``reset`` repairs the desktop. Wiring mistakes (an unknown backend, a
task that names an unknown metric) raise at construction or reset. ``info``'s
keys and shapes are :class:`~osworld_mcp_env.info.StepInfo`.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import shutil
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from osworld_mcp_env.actions import (
    BASH,
    COMPUTER_USE_ACTIONS,
    ActionLimits,
    Executor,
    GuiAction,
    ToolCall,
    parse_action,
)
from osworld_mcp_env.backends import Desktop, make_desktop
from osworld_mcp_env.backends.base import CpuWeighted, ScreenCapture
from osworld_mcp_env.backends.local.cgroups import DEFAULT_CPU_WEIGHT
from osworld_mcp_env.deadline import budget, deadline
from osworld_mcp_env.env.prepared_reset import PREPARING_CPU_WEIGHT, PreparedEpisode, Register, ResetPreparer
from osworld_mcp_env.env.tools import ToolCatalog
from osworld_mcp_env.errors import (
    ActionError,
    DesktopError,
    ErrorCode,
    EvaluationError,
    GuestTimeout,
    InputRejected,
    StaleFrameError,
    TaskError,
)
from osworld_mcp_env.evaluators.evaluate import evaluate
from osworld_mcp_env.info import (
    CheckReport,
    EvalErrorReport,
    EvaluationReport,
    FaultReport,
    StepInfo,
    ToolCallRecord,
    ToolSchema,
)
from osworld_mcp_env.mcp_host.apps import app_from_wm_class
from osworld_mcp_env.network import NetworkConfig, NetworkMode
from osworld_mcp_env.spaces import Call, action_space, fit_text_fields, observation_space
from osworld_mcp_env.tasks.bundled import materialize_bundled_files
from osworld_mcp_env.tasks.context import TaskContext, TaskRunConfig
from osworld_mcp_env.tasks.loader import load_task
from osworld_mcp_env.tasks.model import Task
from osworld_mcp_env.tasks.setup import run_steps
from osworld_mcp_env.text import truncate

# After setup: wait until the screen and the desktop's CPU stay still for 150 ms, at most 8 s.
RESET_SETTLE = {"first_change_ms": 300.0, "quiet_ms": 150.0, "max_ms": 8000.0}
# Of each step's deadline, this much (at most a quarter of it) is kept for the observation
# after the action: a hung action still returns a frame in time.
OBSERVE_RESERVE_S = 1.0

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class EnvConfig:
    """Settings of one env; ``gym.make`` keyword arguments map onto these fields.

    Attributes:
        backend: Desktop backend name (``local``: the embedded sandboxed desktop).
        task: Default task (id, path or OSWorld dict) when ``reset`` gets none.
        max_steps: Steps before ``truncated`` (OSWorld's default budget: 50); the
            evaluator scores a truncated episode. ``gym.make``'s
            ``max_episode_steps`` lowers it (``step_limit.TimeLimitAsMaxSteps``).
        screen_width: Screen width in pixels.
        screen_height: Screen height in pixels.
        a11y_tree: Add the AT-SPI tree to every observation (costs 0.3–1 s a step).
        enable_mcp: Serve the MCP tool namespaces in the desktop and accept
            ``{"name": "<namespace>.<tool>", ...}`` calls.
        enable_bash: Accept ``{"name": "bash", ...}`` calls (run as the desktop user).
        bash_output_chars: Output of a bash call beyond this is cut, with a marker.
        stale_guard: Refuse GUI actions citing a frame whose window layout changed.
        cache_dirs: Local directories that stand in for the internet for ``download`` steps.
        max_sleep_s: Cap of one ``sleep`` step of a task.
        step_timeout_s: Deadline of one whole ``step`` (action, settle wait,
            observation and, at the episode's end, evaluation): every desktop
            request of the step is bounded by what is left of it, and a step that
            hits it returns a ``timeout`` error value.
        record_timings: Put wall-clock timings into ``info["timings"]`` and
            ``info["tool_call"]["latency_ms"]``. They are the one part of ``info``
            that differs between two runs of the same seed and actions; turn them
            off where ``info`` must be deterministic (``check_env``).
        limits: Size bounds of one action; the action space declares the same bounds.
        backend_options: Extra keyword arguments of the backend.
        prepare_resets: Allow prepared resets (:meth:`OSWorldMCPEnv.prepare_reset`, the
            ``prepare_next`` reset option): the next episode's desktop is made and set up
            in the background on a second, fresh sandbox, and a reset to that task swaps
            to it. Costs a second desktop's memory and CPU while it is prepared; at most
            one per env. Off: both are ignored.
        preparing_cpu_weight: The CPU weight of a desktop while it is prepared, against
            the episode's (100, cgroups' default; 1-10000): the agent's desktop comes first
            under contention. Where the backend has no CPU cgroup it is ignored.
        network: ``"loopback"`` (default: the desktop reaches nothing outside itself),
            ``"internet"`` (outbound TCP through a host proxy that refuses the host's
            and private addresses), or a mapping of
            :class:`~osworld_mcp_env.network.NetworkConfig` fields (``allow``, ``hosts``,
            ``proxy_url`` for OSWorld's ``proxy: true`` tasks). Local backend only.
    """

    backend: str = "local"
    task: Any = None
    max_steps: int = 50
    screen_width: int = 1920
    screen_height: int = 1080
    a11y_tree: bool = False
    enable_mcp: bool = True
    enable_bash: bool = False
    bash_output_chars: int = 10_000
    stale_guard: bool = False
    cache_dirs: tuple[str, ...] = ()
    max_sleep_s: float = 5.0
    step_timeout_s: float = 60.0
    record_timings: bool = True
    limits: ActionLimits = field(default_factory=ActionLimits)
    backend_options: dict[str, Any] = field(default_factory=dict)
    prepare_resets: bool = False
    preparing_cpu_weight: int = PREPARING_CPU_WEIGHT
    network: NetworkConfig | str | dict[str, Any] = NetworkMode.LOOPBACK

    def __post_init__(self) -> None:
        object.__setattr__(self, "network", NetworkConfig.parse(self.network))
        if not 1 <= self.preparing_cpu_weight <= 10000:
            raise ValueError(f"preparing_cpu_weight must be in 1..10000, got {self.preparing_cpu_weight}.")
        if self.max_steps < 1:
            raise ValueError(f"max_steps must be >= 1, got {self.max_steps}.")
        if not self.step_timeout_s > 0:
            raise ValueError(f"step_timeout_s must be > 0 seconds, got {self.step_timeout_s}.")
        if self.screen_width < 64 or self.screen_height < 64:
            raise ValueError(
                f"The screen must be at least 64x64, got {self.screen_width}x{self.screen_height}."
            )
        object.__setattr__(self, "cache_dirs", tuple(str(p) for p in self.cache_dirs))


class OSWorldMCPEnv(gym.Env[dict[str, Any], Call]):
    """A real desktop with OSWorld tasks; GUI actions and text tools in one action space.

    Observation: ``screenshot`` (uint8 HxWx3), ``tool_result`` (text; empty after a
    GUI action), ``active_app``, ``instruction`` and, with ``a11y_tree=True``, the
    accessibility tree; each text is cut to its space's bound. Actions: one call,
    JSON text or a mapping (:class:`~osworld_mcp_env.spaces.CallSpace`). Reward:
    0 until the episode ends, then the task evaluator's score.
    ``terminate``/``answer`` end the episode (``terminated``); ``max_steps``
    truncates it. ``info``: :class:`~osworld_mcp_env.info.StepInfo`.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 1}  # noqa: RUF012 - gym.Env's instance field

    def __init__(self, render_mode: str | None = None, **kwargs: Any) -> None:
        self.config = EnvConfig(**kwargs)
        self.render_mode = render_mode
        cfg = self.config
        self._observation_fields = observation_space(
            cfg.screen_width, cfg.screen_height, with_a11y=cfg.a11y_tree
        )
        self.observation_space = self._observation_fields
        self.action_space = action_space(cfg.limits)
        self._desktop: Desktop | None = None
        self._task: Task | None = None
        self._context: TaskContext | None = None
        self._work_dir = tempfile.TemporaryDirectory(prefix="osworld-env-")
        self._steps = 0
        self._done = False
        self._last_pixels: np.ndarray | None = None
        self._frame_layouts: dict[int, str] = {}
        self._frame_id = 0
        self._tools: ToolCatalog | None = None
        self._shown_tools: frozenset[str] = frozenset()
        self._preparer = ResetPreparer(self._build_prepared) if cfg.prepare_resets else None
        self._prepared_ids = itertools.count()
        self._cold_reset_s: float | None = None  # the last cold start's, for the preparer's choice

    # --- Gymnasium API --------------------------------------------------------
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Restarts the desktop from a clean state and runs the task's setup.

        A desktop broken by the last episode (a dead X server, guest server or tool
        host) does not make this raise: the backend's ``restart`` replaces what
        does not answer, and when the setup still hits a dead desktop, the env
        replaces the whole desktop and runs the setup once more. Raises only for
        wiring mistakes (no task, an unknown task) or a desktop that cannot start.

        With ``prepare_resets`` on, a desktop prepared for this task
        (:meth:`prepare_reset`) replaces the used one instead, and the used one is
        closed in the background; a preparation for another task, or one that failed,
        is discarded and the reset takes the cold path. The seed does not choose
        between them: it never reaches the desktop.

        Args:
            seed: Seeds ``np_random`` (the desktop itself is deterministic per task).
            options: ``{"task": id | path | OSWorld dict}``; default: the env's ``task``.
                ``"prepare_next"`` (same forms): with ``prepare_resets`` on, start
                preparing that task now, beside this episode, so that the reset after
                it finds it ready (a vector env's members end at different steps, and
                the group's next reset waits for the last of them).
        """
        super().reset(seed=seed)
        started = time.perf_counter()
        options = options or {}
        source = options.get("task", self.config.task)
        if source is None:
            raise TaskError("No task: pass reset(options={'task': ...}) or gym.make(..., task=...).")
        task = load_task(source)
        self._task = None  # a reset that raises leaves no episode to step in
        next_source = options.get("prepare_next")
        prepare_next = load_task(next_source) if next_source is not None and self._preparer else None
        recovered = ""
        prepared, why_not = (
            self._preparer.take(task, cold_s=self._cold_reset_s) if self._preparer else (None, "")
        )
        if prepared is not None:
            timings = self._swap_in(prepared)
        else:
            if why_not:
                logger.info("reset to %s takes the cold path: %s", task.id, why_not)
            try:
                timings = self._start_episode(task, replace_desktop=False)
            except DesktopError as exc:
                recovered = f"{type(exc).__name__}: {exc}"
                timings = self._start_episode(task, replace_desktop=True)
        self._task = task
        self._steps, self._done = 0, False
        self._frame_layouts.clear()
        self._frame_id = 0
        obs, info = self._observe(tool_result="")
        timings["reset_ms"] = (time.perf_counter() - started) * 1000
        if prepare_next is not None:
            self._prepare(prepare_next)
        info["task_id"] = task.id
        if recovered:
            info["desktop_replaced"] = recovered
        info["timings"] = timings
        return obs, self._reported(info)

    def step(self, action: Call) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        """Executes one call (GUI or tool); agent mistakes and desktop faults come back as values.

        Returns within ``step_timeout_s`` (plus the host's own bookkeeping): a step
        that hits the deadline reports ``timeout``, one that finds the desktop dead
        ``desktop_error``; the next ``reset`` repairs the desktop.
        """
        if self._task is None:
            raise TaskError("Call reset() before step().")
        with deadline(self.config.step_timeout_s):
            return self._step(action, time.perf_counter())

    def _step(self, action: Call, started: float) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        if self._done:
            over = ActionError(ErrorCode.EPISODE_OVER, "The episode has ended; call reset().")
            obs, over_info = self._observe(tool_result=over.render())
            over_info["error"] = over.to_dict()
            return obs, 0.0, True, False, self._reported(over_info)
        self._steps += 1
        parsed = parse_action(
            action, (self.config.screen_width, self.config.screen_height), self.config.limits
        )
        info: StepInfo = {}
        terminated = False
        tool_result = ""
        settled: ScreenCapture | None = None  # a GUI action's settled screen, for the observation
        if isinstance(parsed, ActionError):
            error: ActionError | None = parsed
        else:
            info["action"] = parsed.to_call()
            # The observation after the action gets its own slice of the deadline.
            reserve = min(OBSERVE_RESERVE_S, self.config.step_timeout_s / 4)
            with deadline(budget(self.config.step_timeout_s) - reserve):
                if isinstance(parsed, GuiAction):
                    error, terminated, settled = self._run_gui(parsed, info)
                else:
                    error, tool_result = self._run_tool(parsed, info)
        if error is not None:
            info["error"] = error.to_dict()
            tool_result = error.render()
        action_ms = (time.perf_counter() - started) * 1000
        truncated = not terminated and self._steps >= self.config.max_steps
        reward = 0.0
        if terminated or truncated:
            self._done = True
            settled = None  # the evaluator may change the screen: observe after it
            reward = self._score(parsed, info)
        obs, obs_info = self._observe(tool_result=tool_result, capture=settled)
        action_timings = info.pop("timings", {})
        info.update(obs_info)
        info["timings"] = {
            **action_timings,
            **obs_info.get("timings", {}),
            "action_ms": action_ms,
            "step_ms": (time.perf_counter() - started) * 1000,
        }
        return obs, reward, terminated, truncated, self._reported(info)

    def limit_steps(self, max_steps: int) -> None:
        """Lowers ``max_steps`` to ``max_steps`` (a larger value changes nothing).

        ``gym.make(..., max_episode_steps=n)`` lands here (:class:`TimeLimitAsMaxSteps`),
        so that the env's own truncation, which runs the evaluator, comes first.
        """
        if max_steps < 1:
            raise ValueError(f"max_steps must be >= 1, got {max_steps}.")
        self.config = replace(self.config, max_steps=min(self.config.max_steps, max_steps))

    def prepare_reset(self, task: Any) -> bool:
        """Starts preparing the next episode of ``task`` in the background (``prepare_resets`` on).

        A fresh desktop, which no agent has touched, is made beside the running one and
        the task's setup runs on it; the next ``reset`` to ``task`` swaps to it (~the
        time of one observation) instead of restarting and setting up the used one.
        One preparation per env: preparing another task discards the last. For a
        runner or vector env that knows its schedule; ``docs/security.md`` says why
        the running episode's agent cannot reach the prepared desktop.

        Args:
            task: Id, path or OSWorld dict, as ``reset``'s ``"task"`` option.

        Returns:
            False (and nothing starts) when ``prepare_resets`` is off.

        Raises:
            TaskError: An unknown or malformed task (a wiring mistake, at once).
        """
        if self._preparer is None:
            return False
        self._prepare(load_task(task))
        return True

    def _prepare(self, task: Task) -> None:
        assert self._preparer is not None
        self._cache_roots()  # made here, on this thread, not by the build on its worker
        self._preparer.prepare(task)

    def render(self) -> np.ndarray | None:
        """The last screenshot (``rgb_array``)."""
        return None if self._last_pixels is None else self._last_pixels.copy()

    def close(self) -> None:
        """Stops the desktop (and a prepared one); no process or temporary directory remains."""
        if self._preparer is not None:
            self._preparer.close()
        self._close_tools()
        if self._desktop is not None:
            self._desktop.close()
            self._desktop = None
        self._work_dir.cleanup()

    # --- internals ------------------------------------------------------------
    def _reported(self, info: StepInfo) -> dict[str, Any]:
        """``info`` as Gymnasium types it; without timings when they are off."""
        if not self.config.record_timings:
            info.pop("timings", None)
        return dict(info)

    def _latency(self, milliseconds: float) -> float | None:
        """A call's wall-clock time for its record, None when timings are off."""
        return milliseconds if self.config.record_timings else None

    @property
    def preparer(self) -> ResetPreparer | None:
        """The background preparer of the next episode; None with ``prepare_resets`` off."""
        return self._preparer

    @property
    def desktop(self) -> Desktop:
        """The running desktop (started by the first ``reset``)."""
        if self._desktop is None:
            raise DesktopError("The desktop is not running; call reset() first.")
        return self._desktop

    def _cache_roots(self) -> tuple[Path, ...]:
        """The user's cache directories, then the bundled tasks' generated files."""
        bundled = Path(self._work_dir.name) / "bundled-cache"
        if not bundled.exists():
            materialize_bundled_files(bundled)
        return (*(Path(p) for p in self.config.cache_dirs), bundled)

    def _start_episode(self, task: Task, *, replace_desktop: bool) -> dict[str, float]:
        """Brings up a clean desktop and its tool client, then runs the task's setup."""
        started = time.perf_counter()
        self._start_or_restart_desktop(replace=replace_desktop)
        desktop_ms = (time.perf_counter() - started) * 1000
        self._context = self._new_context(task, Path(self._work_dir.name))
        self._set_up(task, self.desktop, self._context)
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
            tools = ToolCatalog(socket, desktop)
            register(tools)
            # The first observation lists the focused app's tools: list them now. A host
            # that does not answer yet shows as the observation's tools_error, as cold.
            with contextlib.suppress(DesktopError):
                active = desktop.active_window()
                tools.for_app(app_from_wm_class(active.wm_class) if active else "")
        return PreparedEpisode(task, desktop, context, tools)

    def _swap_in(self, prepared: PreparedEpisode) -> dict[str, float]:
        """Makes the prepared desktop the episode's; the used one is closed in the background, not reused."""
        assert self._preparer is not None
        started = time.perf_counter()
        used_desktop, used_tools, used_context = self._desktop, self._tools, self._context
        if isinstance(prepared.desktop, CpuWeighted):
            prepared.desktop.set_cpu_weight(DEFAULT_CPU_WEIGHT)
        self._desktop, self._tools, self._context = prepared.desktop, prepared.tools, prepared.context
        self._preparer.recycle(used_tools, used_desktop)
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
        if self._tools is not None and not self._tools.serves(socket, self._desktop):
            self._close_tools()
        if socket is not None and self._tools is None:
            self._tools = ToolCatalog(socket, self._desktop)

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
        if self._tools is not None:
            self._tools.close()
            self._tools = None

    def _run_gui(
        self, action: GuiAction, info: StepInfo
    ) -> tuple[ActionError | None, bool, ScreenCapture | None]:
        """(error, whether the episode ends, the settled screen when the backend sent it along)."""
        if action.ends_episode:
            return None, True, None
        if COMPUTER_USE_ACTIONS[action.action].executor is Executor.ENV:  # `wait`: the env waits
            return self._wait(action.arguments["time"]), False, None
        expected_layout = None
        if self.config.stale_guard and action.frame_id is not None:
            expected_layout = self._frame_layouts.get(action.frame_id)
            if expected_layout is None:
                return (
                    ActionError(
                        ErrorCode.STALE_GUI_FRAME,
                        f"Frame {action.frame_id} is not among the recent frames; no input was sent.",
                        {"input_events_emitted": False},
                    ),
                    False,
                    None,
                )
        call = {"action": action.action, "arguments": dict(action.arguments)}
        try:
            result = self.desktop.gui(
                call,
                expected_layout=expected_layout,
                timeout=self.config.step_timeout_s,
                capture=True,
                with_layout=self.config.stale_guard,
            )
        except DesktopError as exc:
            return desktop_fault(exc), False, None
        info["timings"] = {"settle_ms": result.settle_ms}
        return None, False, result.capture

    def _wait(self, seconds: float) -> ActionError | None:
        left = budget(seconds)
        time.sleep(max(0.0, left))
        if left < seconds:
            return ActionError(
                ErrorCode.TIMEOUT,
                f"Waited {max(0.0, left):.1f} of the {seconds:g} s asked: "
                f"a step lasts at most {self.config.step_timeout_s:g} s.",
            )
        return None

    def _run_tool(self, call: ToolCall, info: StepInfo) -> tuple[ActionError | None, str]:
        if call.name == BASH and self.config.enable_bash:
            return self._run_bash(call, info)
        if self._tools is None:
            return ActionError(
                ErrorCode.UNKNOWN_TOOL,
                f"No tool named {call.name!r} is available here; GUI actions use name 'computer_use'.",
                {"name": call.name},
            ), ""
        time_left = budget(self.config.step_timeout_s)
        if time_left <= 0:
            return ActionError(ErrorCode.TIMEOUT, "No time was left for the tool call; nothing was sent."), ""
        result = self._tools.call(call.name, dict(call.arguments), timeout_s=time_left)
        info["tool_call"] = ToolCallRecord(
            name=call.name,
            arguments=dict(call.arguments),
            exec_ok=result.exec_ok,
            effect=result.effect,
            read_only=self._tools.is_read_only(call.name),
            in_catalog=call.name in self._shown_tools,
            dispatched=result.dispatched,
            returncode=None,
            latency_ms=self._latency(result.latency_ms),
        )
        if result.error_code is not None:
            message = result.text.removeprefix(f"Error [{result.error_code}]: ")
            return ActionError(str(result.error_code), message, {"name": call.name}), ""
        # The tool changed the app behind the screen's back: let it repaint before the frame,
        # with the same thresholds as after a GUI action (the guest's defaults).
        try:
            info["timings"] = {"settle_ms": self.desktop.settle()}
        except DesktopError as exc:
            # The tool ran; a desktop too sick to settle shows in the observation's error.
            info["settle_error"] = desktop_fault(exc).to_dict()
        return None, result.text

    def _run_bash(self, call: ToolCall, info: StepInfo) -> tuple[ActionError | None, str]:
        command = call.arguments.get("command")
        timeout = call.arguments.get("timeout", 30)
        if not isinstance(command, str) or not command.strip():
            return ActionError(ErrorCode.INVALID_ARGUMENTS, "bash needs a non-empty string 'command'."), ""
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout <= 300:
            return ActionError(
                ErrorCode.INVALID_ARGUMENTS, "bash 'timeout' must be a number of seconds in (0, 300]."
            ), ""
        started = time.perf_counter()
        try:
            result = self.desktop.execute(command, shell=True, timeout=float(timeout))
        except DesktopError as exc:
            return desktop_fault(exc), ""
        text = result.output + (f"\n[stderr]\n{result.error}" if result.error else "")
        text = truncate(text, self.config.bash_output_chars)
        # A command is no listed tool and its effect is unknown (see ToolCallRecord).
        info["tool_call"] = ToolCallRecord(
            name=BASH,
            arguments=dict(call.arguments),
            exec_ok=result.status == "success",
            effect=None,
            read_only=None,
            in_catalog=False,
            dispatched=True,
            returncode=result.returncode,
            latency_ms=self._latency((time.perf_counter() - started) * 1000),
        )
        if result.timed_out:
            return ActionError(
                ErrorCode.TIMEOUT,
                f"The command ran past its {timeout:g} s timeout or the step's deadline and was killed.",
            ), text
        return None, f"[exit code {result.returncode}]\n{text}"

    def _score(self, parsed: Any, info: StepInfo) -> float:
        declared_infeasible = (
            isinstance(parsed, GuiAction)
            and parsed.action == "terminate"
            and parsed.arguments.get("status") == "failure"
        )
        assert self._task is not None and self._context is not None
        try:
            evaluation = evaluate(
                self._task, self.desktop, self._context, declared_infeasible=declared_infeasible
            )
        except (EvaluationError, DesktopError, TaskError) as exc:
            # Not a score: reports keep evaluator failures apart from a 0.
            info["eval_error"] = EvalErrorReport(type=type(exc).__name__, message=str(exc))
            return 0.0
        info["evaluation"] = EvaluationReport(
            score=evaluation.score,
            checks=[
                CheckReport(func=c.func, score=c.score, result_missing=c.result_missing, reason=c.reason)
                for c in evaluation.checks
            ],
            infeasible=evaluation.infeasible,
        )
        if isinstance(parsed, GuiAction) and parsed.action == "terminate":
            info["claimed_success"] = parsed.arguments.get("status") == "success"
        return float(evaluation.score)

    def _observe(
        self, *, tool_result: str, capture: ScreenCapture | None = None
    ) -> tuple[dict[str, Any], StepInfo]:
        """The observation, every text cut to its space's bound, and its part of ``info``.

        ``capture``: the screen already taken once the action settled (None: take one now).
        """
        started = time.perf_counter()
        info: StepInfo = {"step": self._steps}
        try:
            if capture is None:
                capture = self.desktop.screenshot(with_layout=self.config.stale_guard)
            active = capture.active_window
        except DesktopError as exc:
            # A hung desktop must not hang or crash step(): show the last frame and say so.
            capture, active = None, None
            info["observation_error"] = FaultReport(code="desktop_unresponsive", message=str(exc))
        if capture is not None:
            self._last_pixels = capture.pixels
            # Episode-local frame ids, the only ones agents see and cite: deterministic
            # for a seed and an action sequence.
            self._frame_id += 1
            if capture.layout_hash:
                self._frame_layouts[self._frame_id] = capture.layout_hash
                for old in [k for k in self._frame_layouts if k < self._frame_id - 16]:
                    del self._frame_layouts[old]
        elif self._last_pixels is None:
            self._last_pixels = np.zeros((self.config.screen_height, self.config.screen_width, 3), np.uint8)
        else:
            # The last frame again, as a new array: callers keep (and may modify) each observation.
            self._last_pixels = self._last_pixels.copy()
        obs: dict[str, Any] = {
            "screenshot": self._last_pixels,
            "tool_result": tool_result,
            "active_app": app_from_wm_class(active.wm_class) if active else "",
            "instruction": self._task.instruction if self._task else "",
        }
        if self.config.a11y_tree:
            try:
                obs["a11y_tree"] = self.desktop.accessibility_tree()
            except DesktopError as exc:
                obs["a11y_tree"] = f"Error [a11y_unavailable]: {exc}"
        fit_text_fields(obs, self._observation_fields)
        app = obs["active_app"]
        tools: list[ToolSchema] = []
        if self._tools is not None:
            try:
                tools = self._tools.for_app(app)
            except DesktopError as exc:
                info["tools_error"] = FaultReport(code="tools_unavailable", message=str(exc))
        self._shown_tools = frozenset(t["name"] for t in tools)
        info["tools"] = tools
        info["frame_id"] = self._frame_id
        info["active_window"] = active.title if active else ""
        info["timings"] = {"observe_ms": (time.perf_counter() - started) * 1000}
        return obs, info


def desktop_fault(exc: DesktopError) -> ActionError:
    """The one place a desktop failure becomes an error code, by the failure's type.

    ``timeout`` only when time ran out (:class:`GuestTimeout`: no answer in time,
    or the guest stopped at the deadline); the guest's refusals of a GUI action
    are the agent's (:class:`StaleFrameError`: a stale frame, :class:`InputRejected`:
    input it cannot produce, such as an unknown key name); a refused, reset or
    missing connection and any other failure is ``desktop_error``.
    """
    if isinstance(exc, GuestTimeout):
        progress: dict[str, Any] = {
            k: exc.fields[k] for k in ("input_events_emitted", "typed") if k in exc.fields
        }
        return ActionError(ErrorCode.TIMEOUT, f"The desktop did not finish in time: {exc.detail}", progress)
    if isinstance(exc, StaleFrameError):
        return ActionError(
            ErrorCode.STALE_GUI_FRAME,
            "The window layout changed since the cited frame; no input was sent. Look at the new screenshot.",
            {"input_events_emitted": False},
        )
    if isinstance(exc, InputRejected):
        return ActionError(ErrorCode.INVALID_ARGUMENTS, exc.detail, {"input_events_emitted": False})
    return ActionError(ErrorCode.DESKTOP_ERROR, str(exc))


__all__ = ["EnvConfig", "OSWorldMCPEnv", "desktop_fault"]
