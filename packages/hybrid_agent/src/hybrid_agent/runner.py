"""Evaluation runs: every task of a suite, N runs each, on one or several desktops in parallel.

Each env runs its own episode on its own thread and starts its next task the moment
its episode ends: no env waits for the slowest one of a batch. Every step goes
through :class:`~hybrid_agent.agent_loop.AgentLoop`, the turn the trainer's rollouts
take too; policy calls go through :class:`~hybrid_agent.dispatch.PolicyDispatcher`
(a local model still generates for every env that is waiting, an HTTP policy sends
the requests as they come). Every episode is recorded by
:mod:`hybrid_agent.recorder`; a resumed run skips finished episodes.

Per step the record holds the model output, its ``finish_reason``, the parse result
and its repairs, the call sent, the evidence, the retention decisions, the tools
shown, tokens (and whether they were estimated) and timings (policy, env, and the
runner's own overhead).

A reply that executes nothing (it does not parse, it was cut off, its call stands in
unfinished reasoning) is one step: the env gets an empty action (refused as invalid,
nothing dispatched, the step counted towards ``max_steps``), and why is shown to the
model as the next tool result. Such a turn does not enter the past steps of the context.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
from osworld_mcp_env.env.prepared_reset import with_prepared_resets

from hybrid_agent.agent_loop import AgentConfig, AgentEpisode, AgentLoop, error_end
from hybrid_agent.cost import Budget, Spend, run_spend, step_spend
from hybrid_agent.dispatch import PolicyDispatcher
from hybrid_agent.errors import ConfigError
from hybrid_agent.policies.base import Policy
from hybrid_agent.progress import Progress
from hybrid_agent.recorder import (
    EpisodeWriter,
    check_run_config,
    clear_stop,
    plan_resume,
    write_stop,
    write_suite,
)
from hybrid_agent.suite import SuiteTask

ENV_ID = "osworld_mcp_env:OSWorldMCP-v0"
SCHEDULES = ("per_episode", "lockstep")


@dataclass(frozen=True)
class RunConfig:
    """One evaluation configuration (stored in ``run.json``; a resume must match it).

    Attributes:
        policy: The policy spec (``scripted``, ``openai:URL#MODEL`` ...), for the record.
        suite: The suite spec, for the record.
        agent: What the model is shown and how its reply is read (the trainer fills the same type).
        runs: Runs per task (N).
        envs: Desktops stepped in parallel.
        max_steps: Steps per episode before truncation (OSWorld: 50).
        schedule: ``per_episode`` (each env on its own, the default) or ``lockstep``
            (every policy call waits for all envs at work: the old round-by-round loop).
        save_screenshots: Write each step's frame as PNG.
        env_kwargs: Extra ``gym.make`` keyword arguments (``backend``, ``cache_dirs`` ...).
    """

    policy: str
    suite: str = "bundled"
    agent: AgentConfig = field(default_factory=AgentConfig)
    runs: int = 1
    envs: int = 1
    max_steps: int = 50
    schedule: str = "per_episode"
    save_screenshots: bool = True
    env_kwargs: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.runs < 1 or self.envs < 1 or self.max_steps < 1:
            raise ConfigError(
                f"runs, envs and max_steps must be >= 1, got {self.runs}, {self.envs}, {self.max_steps}."
            )
        if self.schedule not in SCHEDULES:
            raise ConfigError(f"schedule must be one of {SCHEDULES}, got {self.schedule!r}.")

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form for ``run.json`` and episode headers (``schedule`` does not change results)."""
        out = dataclasses.asdict(self)
        out.pop("schedule")
        return out


@dataclass
class EvalResult:
    """What one :func:`evaluate` call did.

    Attributes:
        finished: Episodes finished by this call.
        skipped: Episodes already finished by an earlier call (resume).
        retried: Episodes whose earlier try ended in a curable error, run again by this call.
        exhausted: Errored episodes left as they are: they had their ``max_tries`` tries.
        errors: Episodes that ended in an error (recorded apart from scores).
        wall_s: Wall time of the call.
        stopped: Why the call stopped before every pending episode ran (``budget``); ``None``: it did not.
        not_run: Pending episodes left unrun by the stop (a resumed run runs them).
        spent_usd: The run directory's spend at the end, with a budget; ``None`` without one.
    """

    finished: int = 0
    skipped: int = 0
    retried: int = 0
    exhausted: int = 0
    errors: int = 0
    wall_s: float = 0.0
    stopped: str | None = None
    not_run: int = 0
    spent_usd: float | None = None


EnvFactory = Callable[[], gym.Env]


class _Tally:
    """The counts and the spend of a run, updated by every env's thread."""

    def __init__(
        self, result: EvalResult, progress: Progress | None, budget: Budget | None, spent: Spend
    ) -> None:
        self.result = result
        self.progress = progress
        self.budget = budget
        self.spent = spent
        self._lock = threading.Lock()

    @property
    def over_budget(self) -> bool:
        """The spend reached the budget: no episode may start."""
        return self.budget is not None and self.spent.usd >= self.budget.limit_usd

    def spend(self, tokens: dict[str, Any] | None) -> None:
        if self.budget is not None:
            cost = step_spend(tokens, self.budget.price)
            with self._lock:
                self.spent += cost

    def ended(self, error: bool) -> None:
        with self._lock:
            self.result.finished += 1
            self.result.errors += int(error)
            if self.progress is not None:
                self.progress.advance(error=error)


class Runner:
    """Runs a suite under one :class:`RunConfig` and one policy, recording into ``out``."""

    def __init__(
        self,
        config: RunConfig,
        policy: Policy,
        out: str | Path,
        env_factory: EnvFactory | None = None,
        progress: bool = True,
        max_tries: int = 3,
        budget: Budget | None = None,
    ) -> None:
        """Checks the config against ``out`` (a resumed run must match) and prepares the envs' factory.

        ``max_tries`` bounds how often a resumed run retries an episode that ended in a curable
        error (a policy or desktop error; :func:`hybrid_agent.recorder.worth_retrying`). It is not
        part of the stored config: a resume may raise it.

        With a ``budget``, no episode starts once the directory's spend (earlier calls included)
        reaches it; the episodes in flight finish and are recorded, the rest are left for a
        resume, and ``stop.json`` says why. Neither is part of the stored config.
        """
        self.config = config
        self.max_tries = max_tries
        self.budget = budget
        self.policy = policy
        self.out = Path(out)
        self.loop = AgentLoop(config.agent, policy)
        self.env_factory = env_factory or self._make_env
        self.show_progress = progress
        self._stop = threading.Event()
        check_run_config(self.out, {**config.to_dict(), "coordinates": str(self.loop.coordinates.policy)})

    def _make_env(self) -> gym.Env:
        # Prepared resets are on where the host has memory for a second desktop per env.
        own = {"max_steps": self.config.max_steps, "enable_mcp": not self.config.agent.gui_only}
        kwargs = with_prepared_resets({**own, **self.config.env_kwargs}, self.config.envs)
        return gym.make(ENV_ID, **kwargs)

    # --- the run -------------------------------------------------------------------
    def evaluate(
        self, tasks: Sequence[SuiteTask], pairs: Sequence[tuple[str, int]] | None = None
    ) -> EvalResult:
        """Runs every (task, run) not yet finished in ``out``, and reruns curable errors; returns the counts.

        Every task of the suite is written to ``suite.json``, so reports count a task whose
        every try errored instead of leaving it out of the denominator.

        ``pairs`` narrows the run to these (task_id, run) pairs, in this order (a replay of
        some recorded episodes, each with its own run index and so its own seed); the
        default is every task for runs ``0 .. runs - 1``.

        Raises:
            ConfigError: A pair names a task outside ``tasks`` or a run outside ``0 .. runs - 1``.
        """
        started = time.monotonic()
        write_suite(self.out, [(t.task_id, t.domain) for t in tasks], self.config.runs)
        clear_stop(self.out)
        by_id = {task.task_id: task for task in tasks}
        todo = [(task.task_id, run) for run in range(self.config.runs) for task in tasks]
        if pairs is not None:
            outside = [pair for pair in pairs if pair[0] not in by_id or not 0 <= pair[1] < self.config.runs]
            if outside:
                last = self.config.runs - 1
                raise ConfigError(
                    f"Pairs {outside[:3]} name a task outside the suite or a run outside 0..{last}."
                )
            todo = list(pairs)
        plan = plan_resume(self.out, todo, self.max_tries)
        pending = deque((by_id[task_id], run) for task_id, run in plan.pending)
        result = EvalResult(skipped=plan.kept, retried=len(plan.retrying), exhausted=len(plan.exhausted))
        spent = run_spend(self.out, self.budget.price) if self.budget else Spend()
        tally = _Tally(result, None, self.budget, spent)
        n_envs = 0 if tally.over_budget else min(self.config.envs, len(pending))
        if n_envs > 0:
            tally.progress = Progress(len(todo), result.skipped) if self.show_progress else None
            self._run(n_envs, pending, tally)
        self._record_stop(tally, len(plan.pending))
        result.wall_s = time.monotonic() - started
        return result

    def _run(self, n_envs: int, pending: deque, tally: _Tally) -> None:
        """Steps ``n_envs`` envs, each on its own thread, until the queue is empty or the run stops."""
        progress = tally.progress
        dispatcher = PolicyDispatcher(self.policy, n_envs, lockstep=self.config.schedule == "lockstep")
        self._stop.clear()
        with (
            ThreadPoolExecutor(n_envs, thread_name_prefix="env") as env_pool,
            ThreadPoolExecutor(2, thread_name_prefix="png") as png_pool,
        ):
            envs = list(env_pool.map(lambda _: self.env_factory(), range(n_envs)))
            try:
                workers = [
                    env_pool.submit(self._work, env, pending, dispatcher, png_pool, tally) for env in envs
                ]
                for worker in workers:
                    worker.result()
            finally:
                self._stop.set()  # an interrupted or failed run stops every env after its step
                list(env_pool.map(lambda env: env.close(), envs))
                if progress is not None:
                    progress.close()

    def _record_stop(self, tally: _Tally, pending: int) -> None:
        """Fills the result's spend and, when the budget left episodes unrun, ``stop.json``."""
        result = tally.result
        if self.budget is None:
            return
        result.spent_usd = tally.spent.usd
        result.not_run = pending - result.finished
        if result.not_run > 0 and tally.over_budget:
            result.stopped = "budget"
            write_stop(
                self.out,
                {
                    "reason": "budget",
                    "budget_usd": self.budget.limit_usd,
                    "spent_usd": tally.spent.usd,
                    "uncounted_steps": tally.spent.uncounted,
                    "model": self.budget.model,
                    "not_run": result.not_run,
                },
            )

    def _work(
        self, env: gym.Env, pending: deque, dispatcher: PolicyDispatcher, png_pool, tally: _Tally
    ) -> None:
        """One env's thread: episode after episode until the queue is empty.

        An env with prepared resets on (the default where the host has memory for a second
        desktop per env; ``env_kwargs={"prepare_resets": False}`` turns them off) reserves
        its next episode when it starts one, and prepares it beside the running one.
        """
        prepares = getattr(env.unwrapped, "preparer", None) is not None
        reserved: tuple[SuiteTask, int] | None = None
        try:
            while not self._stop.is_set() and not tally.over_budget:
                item = reserved or _take(pending)
                if item is None:
                    return
                reserved = _take(pending) if prepares else None
                self._episode(env, item[0], item[1], reserved, dispatcher, png_pool, tally)
        except BaseException:
            self._stop.set()
            raise
        finally:
            dispatcher.leave()

    def _episode(
        self,
        env: gym.Env,
        task: SuiteTask,
        run: int,
        following: tuple[SuiteTask, int] | None,
        dispatcher: PolicyDispatcher,
        png_pool,
        tally: _Tally,
    ) -> None:
        header = {
            "task_id": task.task_id,
            "domain": task.domain,
            "run": run,
            "policy": self.policy.name,
            "config": self.config.to_dict(),
            "coordinates": str(self.loop.coordinates.policy),
        }
        if task.tool_reachable is not None:  # the task's annotation defines reachability in Table 3
            header["tool_reachable"] = task.tool_reachable
        writer = EpisodeWriter(self.out, task.task_id, run, header, png_pool)
        started = time.monotonic()
        try:
            options: dict[str, Any] = {"task": task.source}
            if following is not None:  # prepared beside this episode (prepare_resets)
                options["prepare_next"] = following[0].source
            obs, info = env.reset(seed=run, options=options)
        except Exception as exc:  # the runner records crashes, it does not score them
            writer.finish({**error_end("reset_error", exc), "wall_s": time.monotonic() - started})
            tally.ended(error=True)
            return
        episode = AgentEpisode.start(task.task_id, run, obs, info)
        try:
            while not self._stop.is_set():
                turn = self.loop.observe(episode)
                frame = episode.obs["screenshot"] if self.config.save_screenshots else None
                generation = dispatcher.generate(turn.request)
                outcome = self.loop.step(env, episode, turn, generation, resample=dispatcher.generate)
                writer.step(outcome.record, frame)
                tally.spend(outcome.record.get("tokens"))
                if outcome.end is not None:
                    # The instruction closes the record: a dataset built from it (grpo_trainer.sft) rebuilds
                    # every context without the task files.
                    end = {**outcome.end, "instruction": episode.instruction}
                    writer.finish({**end, "wall_s": time.monotonic() - started})
                    tally.ended(error=outcome.end.get("error") is not None)
                    return
        except BaseException:
            writer.abandon()
            raise
        writer.abandon()  # the run was stopped: the episode is run again on resume


def _take(pending: deque) -> Any:
    """The next (task, run) of the shared queue, ``None`` when it is empty (``popleft`` is atomic)."""
    try:
        return pending.popleft()
    except IndexError:
        return None
