"""Continuous batching over many desktops: every episode is its own task on the rollout engine.

Group rollouts (:func:`grpo_trainer.rollouts.group.collect_group`) step G envs in lockstep: each
model call waits for the slowest member's screen, and the next group starts only when the
whole group has ended. Here each env runs on its own thread, one episode after another:
it takes the next :class:`RolloutJob` (a task, a group, a member, the group's seed) the
moment its episode ends, and asks for one reply at a time. The replies come from one
:class:`~hybrid_agent.dispatch.PolicyDispatcher` (the agent harness's, the one evaluation
uses): whoever asks while the engine is generating joins the next batch, which holds
exactly the requests pending when it starts. No env waits for a group to finish, and a
GPU engine always gets every request there is.

With prepared resets (``prepare_next``), a desktop takes its next job from the queue when
its current episode starts, not when it ends, and names that job's task in the reset
(``prepare_next``), so the env sets the next episode up on a second desktop meanwhile and
the reset after it is a swap. Jobs still leave the queue in order, each exactly once; the
cost is that a job waits for the desktop that took it even if another one frees up first
(at most one episode per desktop, at the end of a step). Across steps too: a desktop that
finds this step's queue empty takes a job of the next step's (``upcoming``) as the one it
prepares, and starts the next :meth:`ContinuousRollouts.collect` with it; only each
desktop's very first reset is cold.

Where a desktop runs is the executor's choice, as for the group env: ``sync`` builds it in
this process; ``ray`` builds it in a Ray actor (:class:`~grpo_trainer.rollouts.vector_ray.RayVectorEnv`
of one member, any node of the cluster), while its episode loop stays on its thread here,
next to the policy. An actor that dies mid-episode makes that episode a crash (kept apart
from scores) and the desktop's next reset starts a new actor, so the job after it runs.

The episodes of a group still share one task and one seed (the same start state); they
are regrouped by group id when all jobs are done. Which requests share a batch depends on
thread timing, so continuous rollouts are not bitwise reproducible (group rollouts are).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import gymnasium as gym
from hybrid_agent.dispatch import PolicyDispatcher
from hybrid_agent.policies.base import Generation, Policy, PolicyRequest

from grpo_trainer.errors import ConfigError
from grpo_trainer.model.policy import AgentPolicy, TrainablePolicy, VersionedPolicy
from grpo_trainer.rollouts.episode import Episode
from grpo_trainer.rollouts.group import RolloutConfig, collect_group
from grpo_trainer.rollouts.vector import make_group_env

if TYPE_CHECKING:
    from grpo_trainer.rollouts.vector_ray import RayPlacement

__all__ = ["ContinuousRollouts", "RolloutJob", "group_jobs"]


@dataclass(frozen=True)
class RolloutJob:
    """One episode to roll out.

    Attributes:
        task: The task id or config (``options["task"]``).
        group: The group it belongs to (its G episodes share task and seed).
        member: Its index in the group.
        seed: The group's start state.
        reset_options: More reset options (labels, faults).
    """

    task: Any
    group: int
    member: int
    seed: int
    reset_options: dict[str, Any] = field(default_factory=dict)


def group_jobs(
    task: Any, group: int, seed: int, group_size: int, reset_options: dict[str, Any] | None = None
) -> list[RolloutJob]:
    """The ``group_size`` jobs of one group, members in order."""
    return [RolloutJob(task, group, m, seed, dict(reset_options or {})) for m in range(group_size)]


class ContinuousRollouts:
    """Envs that each roll out job after job, their model calls batched by one dispatcher.

    Attributes:
        agent: The policy the dispatcher batches for (the rollout policy behind
            ``hybrid_agent``'s interface).
        dispatcher: The dispatcher of the :meth:`collect` in progress (``None`` before the first).
    """

    def __init__(
        self,
        env_fns: Sequence[Callable[[], gym.Env]],
        policy: VersionedPolicy | TrainablePolicy,
        config: RolloutConfig,
        generator: Any,
        *,
        prepare_next: bool = False,
        executor: str = "sync",
        placement: RayPlacement | None = None,
    ) -> None:
        """One single-member group env per factory (an env exception becomes that episode's crash).

        Args:
            env_fns: One factory per desktop (with ``ray``, picklable: it runs in the actor).
            policy: The rollout policy (a :class:`VersionedPolicy` stamps weight versions).
            config: Rollout settings (``group_size`` is the jobs', not the envs').
            generator: The ``torch.Generator`` the policy samples with (one batch at a time).
            prepare_next: The envs prepare resets: each reset names the desktop's next task.
            executor: Where each desktop's env runs: ``sync`` (this process) or ``ray`` (an
                actor; the desktops start one after another).
            placement: With ``ray``: what each actor reserves and where; desktop i is pinned to
                ``placement.node_of(i)``.

        Raises:
            ConfigError: A placement without the ``ray`` executor.
        """
        if placement is not None and executor != "ray":
            raise ConfigError(f"placement applies to executor 'ray' only, got executor {executor!r}.")
        self.prepare_next = prepare_next
        self.policy = policy if isinstance(policy, VersionedPolicy) else VersionedPolicy(policy)
        self.config = config
        self.envs = [
            _desktop(fn, executor, placement.member(i) if placement else None) for i, fn in enumerate(env_fns)
        ]
        self.agent: Policy = AgentPolicy(self.policy, "rollout", config.temperature, generator)
        self.generator = generator
        self.dispatcher: PolicyDispatcher | None = None
        # Per desktop: the job of the next collect its last reset prepared (prepare_next).
        self.reserved: list[RolloutJob | None] = [None] * len(self.envs)

    def collect(self, jobs: Sequence[RolloutJob], upcoming: Sequence[RolloutJob] = ()) -> list[list[Episode]]:
        """Rolls out every job; returns the groups in group order, members in order.

        Args:
            jobs: This batch's jobs in queue order.
            upcoming: The next batch's jobs in queue order (with ``prepare_next``): a desktop
                that finds ``jobs`` all taken prepares the first upcoming one left and keeps
                it (:attr:`reserved`) for the next call, whose ``jobs`` must hold it.

        Raises:
            GRPOError: A model call gave no answer (the first error of any env thread).
        """
        pending = deque(jobs)
        first = self._claim(pending)
        later = deque(upcoming if self.prepare_next else ())
        lock = threading.Lock()
        done: list[tuple[RolloutJob, Episode]] = []
        failures: list[BaseException] = []
        dispatcher = self.dispatcher = PolicyDispatcher(self.agent, len(self.envs))

        def take() -> RolloutJob | None:
            with lock:
                return pending.popleft() if pending and not failures else None

        def take_following(i: int) -> RolloutJob | None:
            """This desktop's next job, decided as its current episode starts (prepare_next)."""
            with lock:
                if failures or not (pending or later):
                    return None
                if pending:
                    return pending.popleft()
                self.reserved[i] = later.popleft()
                return self.reserved[i]

        def work(i: int, venv: gym.vector.VectorEnv) -> None:
            try:
                job = first[i] or take()
                while job is not None:
                    following = take_following(i) if self.prepare_next else None
                    episode = self._episode(venv, job, dispatcher, following)
                    with lock:
                        done.append((job, episode))
                    if self.reserved[i] is not None:  # the next batch's: it starts the next collect
                        break
                    job = following if self.prepare_next else take()
            except BaseException as exc:  # re-raised by collect once every thread stopped
                with lock:
                    failures.append(exc)
            finally:
                dispatcher.leave()

        threads = [
            threading.Thread(target=work, args=(i, venv), name=f"rollout-env{i}")
            for i, venv in enumerate(self.envs)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if failures:
            raise failures[0]
        groups: dict[int, list[tuple[int, Episode]]] = {}
        for job, episode in done:
            groups.setdefault(job.group, []).append((job.member, episode))
        return [[e for _, e in sorted(groups[g], key=lambda pair: pair[0])] for g in sorted(groups)]

    def _claim(self, pending: deque[RolloutJob]) -> list[RolloutJob | None]:
        """Takes each desktop's reserved job out of ``pending``, as the job it starts with.

        A reservation this batch does not hold (another plan: a resumed run) is dropped; the
        desktop's prepared reset then goes unused and its first reset here is cold.
        """
        first: list[RolloutJob | None] = []
        for reserved in self.reserved:
            match = next((job for job in pending if reserved is not None and _same(job, reserved)), None)
            if match is not None:
                pending.remove(match)
            first.append(match)
        self.reserved = [None] * len(self.envs)
        return first

    def _episode(
        self,
        venv: gym.vector.VectorEnv,
        job: RolloutJob,
        dispatcher: PolicyDispatcher,
        following: RolloutJob | None = None,
    ) -> Episode:
        """One episode of ``job`` on ``venv``, its model calls answered through ``dispatcher``.

        ``following`` is the job this desktop runs next: its reset prepares that task.
        """
        options = dict(job.reset_options)
        if following is not None:
            options["prepare_next"] = following.task

        def answer(requests: Sequence[PolicyRequest]) -> list[Generation]:
            return [dispatcher.generate(request) for request in requests]

        (episode,) = collect_group(
            venv,
            self.policy,
            job.task,
            seed=job.seed,
            group=job.group,
            config=self.config,
            generator=self.generator,
            reset_options=options,
            generate=answer,
        )
        episode.member = job.member
        return episode

    def close(self) -> None:
        """Closes every env."""
        for venv in self.envs:
            venv.close()


def _desktop(
    env_fn: Callable[[], gym.Env], executor: str, placement: RayPlacement | None
) -> gym.vector.VectorEnv:
    """One desktop: a one-member group env, on ``executor`` (``placement``: where its actor runs)."""
    options = {} if placement is None else {"placement": placement}
    return make_group_env(env_fn, 1, executor=executor, **options)


def _same(job: RolloutJob, reserved: RolloutJob) -> bool:
    """The same episode of a plan: group, member and task (reset options are asked for again)."""
    return (job.group, job.member, job.task) == (reserved.group, reserved.member, reserved.task)
