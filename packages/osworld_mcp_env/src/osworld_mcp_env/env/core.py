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

import time
from dataclasses import replace
from typing import Any

import gymnasium as gym
import numpy as np

from osworld_mcp_env.actions import GUI_ACTIONS, ZOOM, Executor, GuiAction, parse_action
from osworld_mcp_env.backends import Desktop
from osworld_mcp_env.backends.base import ScreenCapture
from osworld_mcp_env.deadline import budget, deadline
from osworld_mcp_env.env.config import EnvConfig
from osworld_mcp_env.env.episode import EpisodeDesktop
from osworld_mcp_env.env.faults import desktop_fault
from osworld_mcp_env.env.prepared_reset import ResetPreparer
from osworld_mcp_env.env.tools import run_tool
from osworld_mcp_env.errors import ActionError, DesktopError, ErrorCode, EvaluationError, TaskError
from osworld_mcp_env.evaluators.evaluate import evaluate
from osworld_mcp_env.info import (
    CheckReport,
    EvalErrorReport,
    EvaluationReport,
    FaultReport,
    StepInfo,
    ToolSchema,
)
from osworld_mcp_env.mcp_host.apps import app_from_wm_class
from osworld_mcp_env.spaces import Call, action_space, fit_text_fields, observation_space
from osworld_mcp_env.tasks.loader import load_task
from osworld_mcp_env.tasks.model import Task
from osworld_mcp_env.zoom import ZoomView, zoom_image

# Of each step's deadline, this much (at most a quarter of it) is kept for the observation
# after the action: a hung action still returns a frame in time.
OBSERVE_RESERVE_S = 1.0


class OSWorldMCPEnv(gym.Env[dict[str, Any], Call]):
    """A real desktop with OSWorld tasks; GUI actions and text tools in one action space.

    Observation: ``screenshot`` (uint8 HxWx3), ``tool_result`` (text; empty after a
    GUI action), ``active_app``, ``instruction`` and, with ``a11y_tree=True``, the
    accessibility tree; each text is cut to its space's bound. Actions: one call,
    JSON text or a mapping (:class:`~osworld_mcp_env.spaces.CallSpace`). Reward:
    0 until the episode ends, then the task evaluator's score.
    ``terminate``/``answer`` end the episode (``terminated``); ``max_steps``
    truncates it; ``zoom`` sends no input and makes the next screenshot an enlarged part
    of the screen (``info["zoom"]``). ``info``: :class:`~osworld_mcp_env.info.StepInfo`.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 1}  # noqa: RUF012 - gym.Env's instance field

    def __init__(self, render_mode: str | None = None, **kwargs: Any) -> None:
        self._episode = EpisodeDesktop(EnvConfig(**kwargs))
        self.render_mode = render_mode
        cfg = self.config
        self._observation_fields = observation_space(
            cfg.screen_width, cfg.screen_height, with_a11y=cfg.a11y_tree
        )
        self.observation_space = self._observation_fields
        self.action_space = action_space(cfg.limits)
        self._task: Task | None = None
        self._steps = 0
        self._done = False
        self._last_pixels: np.ndarray | None = None
        self._frame_layouts: dict[int, str] = {}
        self._frame_id = 0
        self._shown_tools: frozenset[str] = frozenset()

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
        prepare_next = load_task(next_source) if next_source is not None and self.preparer else None
        timings, recovered = self._episode.start(task)
        self._task = task
        self._steps, self._done = 0, False
        self._frame_layouts.clear()
        self._frame_id = 0
        obs, info = self._observe(tool_result="")
        timings["reset_ms"] = (time.perf_counter() - started) * 1000
        if prepare_next is not None:
            self._episode.prepare(prepare_next)
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
        zoom: GuiAction | None = None  # a zoom: the observation shows its region of a fresh capture
        if isinstance(parsed, ActionError):
            error: ActionError | None = parsed
        else:
            info["action"] = parsed.to_call()
            # The observation after the action gets its own slice of the deadline.
            reserve = min(OBSERVE_RESERVE_S, self.config.step_timeout_s / 4)
            with deadline(budget(self.config.step_timeout_s) - reserve):
                if isinstance(parsed, GuiAction):
                    error, terminated, settled = self._run_gui(parsed, info)
                    zoom = parsed if parsed.action == ZOOM else None
                else:
                    error, tool_result = run_tool(
                        parsed,
                        info,
                        tools=self._episode.tools,
                        desktop=self._episode.desktop,
                        config=self.config,
                        shown=self._shown_tools,
                    )
        if error is not None:
            info["error"] = error.to_dict()
            tool_result = error.render()
        action_ms = (time.perf_counter() - started) * 1000
        truncated = not terminated and self._steps >= self.config.max_steps
        reward = 0.0
        if terminated or truncated:
            self._done = True
            settled = zoom = None  # the evaluator may change the screen: observe it whole after it
            reward = self._score(parsed, info)
        obs, obs_info = self._observe(tool_result=tool_result, capture=settled, zoom=zoom)
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
        if self.preparer is None:
            return False
        self._episode.prepare(load_task(task))
        return True

    def render(self) -> np.ndarray | None:
        """The last capture of the whole screen (``rgb_array``; after a zoom, the one it cropped)."""
        return None if self._last_pixels is None else self._last_pixels.copy()

    def close(self) -> None:
        """Stops the desktop (and a prepared one); no process or temporary directory remains."""
        self._episode.close()

    # --- internals ------------------------------------------------------------
    def _reported(self, info: StepInfo) -> dict[str, Any]:
        """``info`` as Gymnasium types it; without timings when they are off."""
        if not self.config.record_timings:
            info.pop("timings", None)
        return dict(info)

    @property
    def config(self) -> EnvConfig:
        """The env's settings; a replaced one (:meth:`limit_steps`) reaches the desktop's start-up too."""
        return self._episode.config

    @config.setter
    def config(self, config: EnvConfig) -> None:
        self._episode.config = config

    @property
    def preparer(self) -> ResetPreparer | None:
        """The background preparer of the next episode; None with ``prepare_resets`` off."""
        return self._episode.preparer

    @property
    def desktop(self) -> Desktop:
        """The running desktop (started by the first ``reset``)."""
        return self._episode.desktop

    def _run_gui(
        self, action: GuiAction, info: StepInfo
    ) -> tuple[ActionError | None, bool, ScreenCapture | None]:
        """(error, whether the episode ends, the settled screen when the backend sent it along)."""
        if action.ends_episode:
            return None, True, None
        if action.action == ZOOM:  # no input: the observation crops a fresh capture
            return None, False, None
        if GUI_ACTIONS[action.action].executor is Executor.ENV:  # `wait`: the env waits
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
        if "window_changes" in result.details:
            info["window_changes"] = result.details["window_changes"]
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

    def _score(self, parsed: Any, info: StepInfo) -> float:
        declared_infeasible = (
            isinstance(parsed, GuiAction)
            and parsed.action == "terminate"
            and parsed.arguments.get("status") == "failure"
        )
        context = self._episode.context
        assert self._task is not None and context is not None
        try:
            evaluation = evaluate(self._task, self.desktop, context, declared_infeasible=declared_infeasible)
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
        self, *, tool_result: str, capture: ScreenCapture | None = None, zoom: GuiAction | None = None
    ) -> tuple[dict[str, Any], StepInfo]:
        """The observation, every text cut to its space's bound, and its part of ``info``.

        ``capture``: the screen already taken once the action settled (None: take one now).
        ``zoom``: a zoom action; the screenshot is then its region of this capture, enlarged
        (:func:`~osworld_mcp_env.zoom.zoom_image`), and ``info["zoom"]`` says which. The
        capture is a frame as any other (its id and layout are kept for the guard), so a
        point read on the zoom cites it; :meth:`render` keeps showing the whole screen.
        When no capture can be taken, the observation is the last whole frame, without
        ``zoom``, and ``observation_error`` says why.
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
        screenshot = self._last_pixels
        if zoom is not None and capture is not None:
            view = ZoomView(zoom.arguments["region"], zoom.arguments["scale"], self._frame_id)
            screenshot = zoom_image(capture.pixels, view.region, view.scale)
            info["zoom"] = view.to_info()
        obs: dict[str, Any] = {
            "screenshot": screenshot,
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
        if self._episode.tools is not None:
            try:
                tools = self._episode.tools.for_app(app)
            except DesktopError as exc:
                info["tools_error"] = FaultReport(code="tools_unavailable", message=str(exc))
        self._shown_tools = frozenset(t["name"] for t in tools)
        info["tools"] = tools
        info["frame_id"] = self._frame_id
        info["active_window"] = active.title if active else ""
        info["timings"] = {"observe_ms": (time.perf_counter() - started) * 1000}
        return obs, info


__all__ = ["EnvConfig", "OSWorldMCPEnv", "desktop_fault"]
