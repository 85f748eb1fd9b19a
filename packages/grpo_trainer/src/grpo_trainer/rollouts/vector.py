"""Group vector envs: G copies of one env, reset from one start state, stepped in lockstep.

Gymnasium's ``AutoresetMode.DISABLED`` refuses to step a vector env once one of its
sub-envs has ended (``SyncVectorEnv`` asserts), yet the G rollouts of a group end at
different steps. :class:`HoldAfterEnd` therefore reports the end in ``info``
(``ended``, ``terminated``, ``truncated``, ``score``) and keeps returning the final
observation, without touching the env, for the steps the others still take. It also
turns an exception of the env into ``info["crash"]``, so one dying desktop does not
take its group down and its episode is dropped and counted, never scored 0.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any, cast

import gymnasium as gym
from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv
from osworld_mcp_env.info import StepInfo, step_info
from osworld_mcp_env.registry import Registry

from grpo_trainer.errors import ConfigError, RegistryError


class HeldInfo(StepInfo, total=False):
    """The env's :class:`~osworld_mcp_env.info.StepInfo` plus what :class:`HoldAfterEnd` adds.

    Attributes:
        ended: The episode ended (terminated, truncated or crashed); later steps are held.
        terminated: At the end: the env terminated the episode.
        truncated: At the end: the env truncated it (step cap).
        score: At the end: the final reward.
        crash: Why the episode crashed (an env exception, an evaluator that could not run).
        held: The env was not stepped: its episode had ended before.
    """

    ended: bool
    terminated: bool
    truncated: bool
    score: float
    crash: str
    held: bool


HOLD_ACTION = "\x00hold"
"""An action a member gets when the others take a step it has no call for (the further calls of a
HybridCUA reply): :class:`HoldAfterEnd` returns its last observation without stepping the env, and
the step costs none of its budget."""


def held_info(info: Mapping[str, Any]) -> HeldInfo:
    """The typed view of one env's ``info`` from a group vector env (no copy, no check)."""
    return cast(HeldInfo, info)


class HoldAfterEnd(gym.Wrapper):
    """Moves the episode end into ``info`` and turns env exceptions into ``info["crash"]``."""

    def __init__(self, env: gym.Env) -> None:
        """Wraps ``env``."""
        super().__init__(env)
        self._final: tuple[Any, HeldInfo] | None = None
        self._last_obs: Any = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Resets the env; a crash gives a sampled placeholder observation and ``info["crash"]``."""
        self._final = None
        try:
            obs, info = self.env.reset(seed=seed, options=options)
        except Exception as exc:  # the rollout records crashes, it does not score them
            obs = self.observation_space.sample()
            self._final = (obs, HeldInfo(ended=True, crash=_describe(exc)))
            return obs, dict(self._final[1])
        self._last_obs = obs
        return obs, info

    def step(self, action: Any):
        """Steps the env until its episode ended, then holds (reward 0, flags never set).

        :data:`HOLD_ACTION` holds a live episode for one step: the env is not stepped.
        """
        if self._final is not None:
            final_obs, final_info = self._final
            return final_obs, 0.0, False, False, {**final_info, "held": True}
        if isinstance(action, str) and action == HOLD_ACTION:
            return self._last_obs, 0.0, False, False, HeldInfo(held=True)
        try:
            obs, reward, terminated, truncated, info = self.env.step(action)
        except Exception as exc:
            self._final = (self._last_obs, HeldInfo(ended=True, crash=_describe(exc)))
            return self._last_obs, 0.0, False, False, dict(self._final[1])
        self._last_obs = obs
        if terminated or truncated:
            eval_error = step_info(info).get("eval_error")
            end = HeldInfo(ended=True, terminated=terminated, truncated=truncated, score=float(reward))
            if eval_error:
                end["crash"] = f"eval_error: {eval_error}"
            info = {**info, **end}
            self._final = (obs, end)
        return obs, reward, False, False, info


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=3)}"


ExecutorFactory = Callable[..., gym.vector.VectorEnv]
"""``(env_fns, **options) -> VectorEnv``: runs the members somewhere (this process, subprocesses, Ray)."""

EXECUTORS: Registry[ExecutorFactory] = Registry(
    "vector executor", error=RegistryError, providers=("grpo_trainer.rollouts.vector_ray",)
)
"""Vector env kinds by name (``make_group_env(executor=...)``); ``ray`` registers on first lookup."""


def register_executor(name: str, factory: ExecutorFactory) -> None:
    """Registers a vector env kind; a duplicate name raises."""
    EXECUTORS.add(name, factory)


def _sync(fns: Sequence[Callable[[], gym.Env]]) -> gym.vector.VectorEnv:
    return SyncVectorEnv(fns, autoreset_mode=AutoresetMode.DISABLED)


def _async(fns: Sequence[Callable[[], gym.Env]]) -> gym.vector.VectorEnv:
    # shared_memory=False: the desktop env's text observations cannot live in shared memory.
    return AsyncVectorEnv(fns, shared_memory=False, autoreset_mode=AutoresetMode.DISABLED)


register_executor("sync", _sync)
register_executor("async", _async)


def _held(env_fn: Callable[[], gym.Env]) -> gym.Env:
    return HoldAfterEnd(env_fn())


def make_group_env(
    env_fn: Callable[[], gym.Env] | Sequence[Callable[[], gym.Env]],
    group_size: int | None = None,
    *,
    executor: str = "sync",
    **executor_options: Any,
) -> gym.vector.VectorEnv:
    """G copies of ``env_fn()``, or one member per factory, each in :class:`HoldAfterEnd`; autoreset off.

    Args:
        env_fn: Builds one env (``lambda: gym.make(ENV_ID, ...)``), or one factory per member
            (members on different hosts: :func:`osworld_mcp_env.backends.libvirt.hosts.libvirt_env_fns`).
            With the ``async`` and ``ray`` executors a factory must pickle (cloudpickle: lambdas do).
        group_size: G; with one factory per member it may be omitted, and must match if given.
        executor: Where the members run: ``sync`` (this process, one after another), ``async``
            (one subprocess each), ``ray`` (one Ray actor each, any node of the cluster:
            :class:`grpo_trainer.rollouts.vector_ray.RayVectorEnv`, the ``ray`` extra); the config's
            ``rollout.executor``.
        executor_options: Passed to the executor (``ray``: ``placement=RayPlacement(...)``).

    Raises:
        ConfigError: ``group_size`` disagrees with the factories.
        RegistryError: An unknown executor name.
    """
    fns = list(env_fn) if isinstance(env_fn, Sequence) else [env_fn] * (group_size or 0)
    if not fns or (group_size is not None and group_size != len(fns)):
        raise ConfigError(f"group_size {group_size} does not match {len(fns)} env factories.")
    return EXECUTORS.get(executor)([partial(_held, fn) for fn in fns], **executor_options)
