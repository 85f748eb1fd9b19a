"""Evaluation runs: every task of a suite, N runs each, on one or several desktops in parallel.

Each env runs one episode at a time; the runner steps all envs in lockstep: the
policy answers every waiting env in one batch (a local model generates for all
of them at once, an HTTP policy sends the requests concurrently), then the envs
execute their calls in parallel threads (each ``step`` waits on its own
desktop). Every episode is recorded by :mod:`hybrid_agent.recorder`; a resumed
run skips finished episodes.

Per step the record holds the model output, the parse result and its repairs,
the call sent, the evidence, the retention decisions, the tools shown, tokens
and timings (policy, env, and the runner's own overhead).

A model output that does not parse is one step: the env gets an empty action
(refused as invalid, nothing dispatched, the step counted towards
``max_steps``), and the parser's message is shown to the model as the next
tool result. Such a turn does not enter the past steps of the context.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from osworld_mcp_env.info import step_info

from hybrid_agent.context import ContextConfig, build_context
from hybrid_agent.coords import CoordinateConfig, CoordinatePolicy, call_to_screen
from hybrid_agent.errors import ConfigError
from hybrid_agent.evidence import evidence_from_info
from hybrid_agent.parse import ParseError, parse_response
from hybrid_agent.policies.base import Generation, Policy, PolicyRequest, preferred_coordinates
from hybrid_agent.presets import retention_from_name
from hybrid_agent.progress import Progress
from hybrid_agent.prompt import PromptConfig
from hybrid_agent.recorder import EpisodeWriter, check_run_config, discard_partials, episode_key
from hybrid_agent.retrieval import BM25Retriever, RetrievalConfig
from hybrid_agent.suite import SuiteTask
from hybrid_agent.toolset import ToolSpec, tools_from_env
from hybrid_agent.trajectory import Frame, Observation, Step

ENV_ID = "osworld_mcp_env:OSWorldMCP-v0"
# A refused, undispatched action: what a parse error costs the env (one counted step).
NO_OP_ACTION = ""


@dataclass(frozen=True)
class RunConfig:
    """One evaluation configuration (stored in ``run.json``; a resume must match it).

    Attributes:
        policy: The policy spec (``scripted``, ``openai:URL#MODEL`` ...), for the record.
        suite: The suite spec, for the record.
        context: Context policy name (``win4``, ``win2+drop`` ...; see :mod:`hybrid_agent.presets`).
        runs: Runs per task (N).
        envs: Desktops stepped in parallel.
        max_steps: Steps per episode before truncation (OSWorld: 50).
        retrieval: Rank the focused app's tools with BM25 (top ``top_k`` + always-include);
            off shows every tool of the app.
        top_k: BM25 top-k.
        gui_only: Offer no tools (the env serves none either).
        keep_think: Show past reasoning inside the window.
        tool_result_chars: L, the characters of a relayed tool result.
        coordinates: Coordinate space of the model; ``None``: the policy's own, else
            Qwen3-VL's relative grid.
        save_screenshots: Write each step's frame as PNG.
        env_kwargs: Extra ``gym.make`` keyword arguments (``backend``, ``cache_dirs`` ...).
    """

    policy: str
    suite: str = "bundled"
    context: str = "win4"
    runs: int = 1
    envs: int = 1
    max_steps: int = 50
    retrieval: bool = True
    top_k: int = 18
    gui_only: bool = False
    keep_think: bool = False
    tool_result_chars: int = 1500
    coordinates: str | None = None
    save_screenshots: bool = True
    env_kwargs: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.runs < 1 or self.envs < 1 or self.max_steps < 1:
            raise ConfigError(
                f"runs, envs and max_steps must be >= 1, got {self.runs}, {self.envs}, {self.max_steps}."
            )
        retention_from_name(self.context)  # a bad name fails here, not after the first reset
        if self.coordinates is not None:
            CoordinatePolicy(self.coordinates)

    def context_config(self, tools_in_request: bool = False) -> ContextConfig:
        """The context builder settings this run uses (``tools_in_request``: no ``<tools>`` block)."""
        return ContextConfig(
            retention=retention_from_name(self.context),
            prompt=PromptConfig(tools_block=not tools_in_request),
            tool_result_chars=self.tool_result_chars,
            keep_think=self.keep_think,
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form for ``run.json`` and episode headers."""
        return asdict(self)


@dataclass
class _Episode:
    """The live state of one episode on one env."""

    task: SuiteTask
    run: int
    writer: EpisodeWriter
    obs: dict[str, Any]
    info: dict[str, Any]
    started: float
    steps: list[Step] = field(default_factory=list)
    feedback: str = ""
    index: int = 0
    request: PolicyRequest | None = None
    shown: tuple[ToolSpec, ...] = ()
    app: str | None = None
    plan: list[dict[str, Any]] = field(default_factory=list)
    frame: Frame | None = None
    prepare_s: float = 0.0


@dataclass
class EvalResult:
    """What one :func:`evaluate` call did.

    Attributes:
        finished: Episodes finished by this call.
        skipped: Episodes already finished by an earlier call (resume).
        errors: Episodes that ended in an error (recorded apart from scores).
        wall_s: Wall time of the call.
    """

    finished: int = 0
    skipped: int = 0
    errors: int = 0
    wall_s: float = 0.0


EnvFactory = Callable[[], gym.Env]


class Runner:
    """Runs a suite under one :class:`RunConfig` and one policy, recording into ``out``."""

    def __init__(
        self,
        config: RunConfig,
        policy: Policy,
        out: str | Path,
        env_factory: EnvFactory | None = None,
        progress: bool = True,
    ) -> None:
        """Checks the config against ``out`` (a resumed run must match) and prepares the envs' factory."""
        self.config = config
        self.policy = policy
        self.out = Path(out)
        self.context_config = config.context_config(bool(getattr(policy, "tools_in_request", False)))
        coordinates = config.coordinates or preferred_coordinates(policy) or CoordinatePolicy.RELATIVE_GRID
        self.coordinates = CoordinateConfig(policy=CoordinatePolicy(coordinates))
        self.retrieval = RetrievalConfig(top_k=config.top_k)
        self.env_factory = env_factory or self._make_env
        self.show_progress = progress
        check_run_config(self.out, {**config.to_dict(), "coordinates": str(coordinates)})

    def _make_env(self) -> gym.Env:
        kwargs = {"max_steps": self.config.max_steps, "enable_mcp": not self.config.gui_only}
        return gym.make(ENV_ID, **{**kwargs, **self.config.env_kwargs})

    # --- the run -------------------------------------------------------------------
    def evaluate(self, tasks: Sequence[SuiteTask]) -> EvalResult:
        """Runs every (task, run) not yet finished in ``out``; returns the counts."""
        started = time.monotonic()
        discard_partials(self.out)
        todo = [(task, run) for run in range(self.config.runs) for task in tasks]
        finished = {p.stem for p in (self.out / "episodes").glob("*.jsonl")}
        pending = [(t, r) for t, r in todo if episode_key(t.task_id, r) not in finished]
        result = EvalResult(skipped=len(todo) - len(pending))
        progress = Progress(len(todo), result.skipped) if self.show_progress else None
        n_envs = min(self.config.envs, len(pending))
        if n_envs == 0:
            return result
        with (
            ThreadPoolExecutor(n_envs, thread_name_prefix="env") as env_pool,
            ThreadPoolExecutor(2, thread_name_prefix="png") as png_pool,
        ):
            envs = list(env_pool.map(lambda _: self.env_factory(), range(n_envs)))
            slots: list[_Episode | None] = [None] * n_envs
            try:
                self._loop(envs, slots, pending, env_pool, png_pool, result, progress)
            finally:
                for episode in slots:
                    if episode is not None:
                        episode.writer.abandon()
                list(env_pool.map(lambda env: env.close(), envs))
                if progress is not None:
                    progress.close()
        result.wall_s = time.monotonic() - started
        return result

    def _loop(self, envs, slots, pending, env_pool, png_pool, result, progress) -> None:
        def finish(i: int, end: dict[str, Any]) -> None:
            episode = slots[i]
            assert episode is not None
            end["wall_s"] = time.monotonic() - episode.started
            episode.writer.finish(end)
            slots[i] = None
            result.finished += 1
            result.errors += int(end.get("error") is not None)
            if progress is not None:
                progress.advance(error=end.get("error") is not None)

        # An env with prepared resets on (``env_kwargs={"prepare_resets": True}``) gets its
        # next episode reserved when it starts one, and prepares it beside the running one.
        prepares = [getattr(env.unwrapped, "preparer", None) is not None for env in envs]
        reserved: list[tuple[SuiteTask, int] | None] = [None] * len(envs)
        while pending or any(slots) or any(reserved):
            starts = []
            for i in [i for i, s in enumerate(slots) if s is None]:
                item = reserved[i] or (pending.pop(0) if pending else None)
                if item is not None:
                    reserved[i] = pending.pop(0) if prepares[i] and pending else None
                    starts.append((i, item, reserved[i]))
            free = [i for i, _item, _next in starts]
            for i, episode in zip(
                free,
                env_pool.map(lambda a: self._start(envs[a[0]], a[1][0], a[1][1], png_pool, a[2]), starts),
                strict=True,
            ):
                slots[i] = episode if isinstance(episode, _Episode) else None
                if not isinstance(episode, _Episode):
                    result.finished += 1
                    result.errors += 1
                    if progress is not None:
                        progress.advance(error=True)
            active = [i for i, s in enumerate(slots) if s is not None]
            if not active:
                continue
            for i in active:
                self._prepare(slots[i])
            t0 = time.perf_counter()
            generations = self.policy.generate([slots[i].request for i in active])
            policy_s = time.perf_counter() - t0
            if len(generations) != len(active):
                raise ConfigError(
                    f"Policy {self.policy.name!r} answered {len(generations)} of {len(active)} requests."
                )
            share = policy_s / len(active)
            pairs = zip(active, generations, strict=True)
            jobs = [(envs[i], slots[i], generation, share) for i, generation in pairs]
            outcomes = env_pool.map(lambda job: self._act(*job), jobs)
            for i, end in zip(active, outcomes, strict=True):
                if end is not None:
                    finish(i, end)

    def _start(
        self, env: gym.Env, task: SuiteTask, run: int, png_pool, following: tuple[SuiteTask, int] | None
    ) -> _Episode | None:
        header = {
            "task_id": task.task_id,
            "domain": task.domain,
            "run": run,
            "policy": self.policy.name,
            "config": self.config.to_dict(),
            "coordinates": str(self.coordinates.policy),
        }
        writer = EpisodeWriter(self.out, task.task_id, run, header, png_pool)
        started = time.monotonic()
        try:
            options = {"task": task.source}
            if following is not None:  # prepared beside this episode (prepare_resets)
                options["prepare_next"] = following[0].source
            obs, info = env.reset(seed=run, options=options)
        except Exception as exc:  # the runner records crashes, it does not score them
            writer.finish(_error_end("reset_error", exc, started))
            return None
        return _Episode(task, run, writer, obs, info, started)

    def _prepare(self, episode: _Episode) -> None:
        t0 = time.perf_counter()
        obs, info = episode.obs, episode.info
        shown = self._shown_tools(obs, info)
        frame = Frame.from_array(obs["screenshot"])
        tool_result = episode.feedback or obs.get("tool_result", "")
        context = build_context(
            episode.steps, Observation(frame, tool_result), obs["instruction"], shown, self.context_config
        )
        episode.shown = shown
        episode.frame = frame
        episode.app = obs.get("active_app") or None
        episode.plan = context.plan.to_dicts()
        episode.request = PolicyRequest(
            context.messages, shown, episode.task.task_id, episode.run, episode.index
        )
        episode.prepare_s = time.perf_counter() - t0

    def _shown_tools(self, obs: dict[str, Any], info: dict[str, Any]) -> tuple[ToolSpec, ...]:
        if self.config.gui_only:
            return ()
        served = tools_from_env(step_info(info).get("tools") or [])
        if not self.config.retrieval:
            return tuple(served)
        return BM25Retriever(served, self.retrieval).retrieve(obs.get("active_app"), obs["instruction"]).tools

    def _act(
        self, env: gym.Env, episode: _Episode, generation: Generation, policy_s: float
    ) -> dict[str, Any] | None:
        """Parses, steps the env, records the step; returns the end record when the episode ended."""
        t0 = time.perf_counter()
        record: dict[str, Any] = {
            "step": episode.index,
            "app": episode.app,
            "shown_tools": [t.qualified_name for t in episode.shown],
            "retention": episode.plan,
            "model_output": generation.text,
            "tokens": {
                "input": generation.input_tokens,
                "output": generation.output_tokens,
                "estimated": generation.tokens_estimated,
            },
            "tool_result_shown": episode.feedback or episode.obs.get("tool_result", ""),
        }
        frame = episode.obs["screenshot"] if self.config.save_screenshots else None
        if generation.error is not None:
            record["timings"] = {"policy_s": generation.latency_s or policy_s}
            episode.writer.step(record, frame)
            return {
                "score": None,
                "error": {"type": "policy_error", "message": generation.error},
                "steps": episode.index + 1,
            }
        parsed = parse_response(generation.text, episode.shown)
        if isinstance(parsed, ParseError):
            record["parse"] = {"ok": False, "code": str(parsed.code), "message": parsed.message}
            action: Any = NO_OP_ACTION
            call = None
        else:
            call = parsed.call
            record["parse"] = {
                "ok": True,
                "call": {"name": call.name, "arguments": call.arguments},
                "repairs": list(parsed.repairs),
                "action_line": parsed.action_line,
            }
            screen = _screen_size(episode.obs["screenshot"])
            sent = call_to_screen(call, screen, self.coordinates) if call.is_gui else call
            action = {"name": sent.name, "arguments": sent.arguments}
            record["action"] = action
        runner_pre_s = time.perf_counter() - t0
        t1 = time.perf_counter()
        try:
            obs, reward, terminated, truncated, info = env.step(action)
        except Exception as exc:  # recorded apart from a score
            record["timings"] = {"policy_s": policy_s, "env_s": time.perf_counter() - t1}
            episode.writer.step(record, frame)
            return {**_error_end("env_error", exc, episode.started), "steps": episode.index + 1}
        env_s = time.perf_counter() - t1
        t2 = time.perf_counter()
        typed = step_info(info)
        record["env_error"] = typed.get("error")
        if call is not None:
            evidence = evidence_from_info(call, info)
            record["evidence"] = asdict(evidence) if evidence is not None else None
            episode.steps.append(
                Step(
                    episode.frame or Frame.from_array(episode.obs["screenshot"]),
                    record["tool_result_shown"],
                    generation.text,
                    call,
                    evidence,
                )
            )
            episode.feedback = ""
        elif isinstance(parsed, ParseError):
            episode.feedback = parsed.render()
        episode.obs, episode.info = obs, info
        episode.index += 1
        record["timings"] = {
            "policy_s": generation.latency_s or policy_s,
            "env_s": env_s,
            "env_ms": typed.get("timings"),
            "runner_s": episode.prepare_s + runner_pre_s + (time.perf_counter() - t2),
        }
        episode.writer.step(record, frame)
        if terminated or truncated:
            eval_error = typed.get("eval_error")
            return {
                "score": None if eval_error else float(reward),
                "error": {
                    "type": "eval_error",
                    "exception": eval_error["type"],
                    "message": eval_error["message"],
                }
                if eval_error
                else None,
                "terminated": terminated,
                "truncated": truncated,
                "claimed_success": typed.get("claimed_success"),
                "evaluation": typed.get("evaluation"),
                "steps": episode.index,
            }
        return None


def _screen_size(pixels: np.ndarray) -> tuple[int, int]:
    height, width = pixels.shape[:2]
    return width, height


def _error_end(kind: str, exc: BaseException, started: float) -> dict[str, Any]:
    return {
        "score": None,
        "error": {
            "type": kind,
            "exception": type(exc).__name__,
            "message": str(exc),
            "trace": traceback.format_exc(),
        },
        "wall_s": time.monotonic() - started,
    }
