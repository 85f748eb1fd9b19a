"""Group members hosted in Ray actors: the G desktops of a group on other machines.

:class:`RayVectorEnv` is a Gymnasium vector env whose members are Ray actors, each
building its env from a picklable factory (``HoldAfterEnd(gym.make(...))``, so the
wrappers run next to the desktop) on the node Ray places it on. ``reset`` and
``step`` send every member its call before waiting for any answer, so the members
run concurrently, as in ``AsyncVectorEnv``, but on any node of the cluster.

A member that fails at the Ray level (its actor died with its node or was killed,
or a call outran ``call_timeout_s``) becomes a crash value like
:class:`~grpo_trainer.rollouts.vector.HoldAfterEnd`'s, ``info["crash"]`` with ``ended``, and
is held until the next ``reset``, which replaces a dead actor by a new one on the
same placement: one lost machine drops its episodes, it does not stop the group.

Continuous rollouts (:mod:`grpo_trainer.rollouts.continuous`, ``executor="ray"``) host each
desktop in a one-member :class:`RayVectorEnv`: the episode loop stays on a thread of the
trainer, every env call goes to the desktop's actor, and a dead actor's episode is a
crash, its next job runs on a new actor.

Ray is the ``ray`` extra of ``grpo_trainer`` and is imported on first use only.
Every node needs this workspace's packages and, for the local backend, the
desktop's programs (``tools/setup_debian.sh``); see
``packages/osworld_mcp_env/docs/scaleout.md``.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space, concatenate, create_empty_array, iterate

from grpo_trainer.errors import ConfigError, GRPOError
from grpo_trainer.rollouts.vector import HeldInfo, register_executor


class RayMemberError(GRPOError, RuntimeError):
    """A member could not be placed or built when the vector env was made (a wiring mistake)."""


@dataclass(frozen=True)
class RayPlacement:
    """Where each member's actor runs and what it reserves on its node.

    Attributes:
        num_cpus: CPUs each actor reserves (Ray schedules by it; one desktop with an office
            app keeps about one core busy).
        memory_mb: Memory each actor reserves, for scheduling only (0: none).
        resources: Custom resources each actor needs, e.g. ``{"desktop": 1}`` to keep members
            on nodes started with ``ray start --resources '{"desktop": 4}'``.
        node_ids: Ray node ids (hex) the members are pinned to, member i on
            ``node_ids[i % len(node_ids)]``; empty: Ray chooses.
        call_timeout_s: Deadline of one actor call (build, reset, step, close). The env's
            own deadlines (``step_timeout_s``, a VM's boot timeout) come first; this one
            catches an actor that stopped answering, which then counts as crashed.
    """

    num_cpus: float = 1.0
    memory_mb: int = 0
    resources: dict[str, float] = field(default_factory=dict)
    node_ids: tuple[str, ...] = ()
    call_timeout_s: float = 900.0

    def __post_init__(self) -> None:
        if self.num_cpus < 0 or self.memory_mb < 0 or not self.call_timeout_s > 0:
            raise ConfigError(
                f"num_cpus and memory_mb must be >= 0 and call_timeout_s > 0, got {self.num_cpus}, "
                f"{self.memory_mb}, {self.call_timeout_s}."
            )
        object.__setattr__(self, "node_ids", tuple(self.node_ids))

    def node_of(self, i: int) -> str | None:
        """The node member ``i`` is pinned to (``node_ids`` in turn), ``None``: Ray chooses."""
        return self.node_ids[i % len(self.node_ids)] if self.node_ids else None

    def member(self, i: int) -> RayPlacement:
        """Member ``i``'s placement alone, for a one-member env that is the i-th of several.

        Continuous rollouts host each desktop in its own one-member :class:`RayVectorEnv`;
        pinning desktop ``i`` to ``node_of(i)`` keeps the rotation over ``node_ids``.
        """
        node = self.node_of(i)
        return replace(self, node_ids=(node,) if node is not None else ())


@dataclass(frozen=True)
class MemberLocation:
    """Where one member's actor runs (for logs, and to find a member's processes)."""

    node_id: str
    hostname: str
    pid: int


class EnvHost:
    """The actor body: one env, built on the actor's node, called by :class:`RayVectorEnv`."""

    def __init__(self, env_fn: Callable[[], gym.Env]) -> None:
        """Builds the env here, on the node Ray placed this actor on."""
        self.env = env_fn()

    def spaces(self) -> tuple[gym.Space, gym.Space, dict[str, Any]]:
        """The env's observation space, action space and metadata."""
        return self.env.observation_space, self.env.action_space, dict(self.env.metadata)

    def where(self) -> MemberLocation:
        """This actor's node, host and process."""
        import ray

        return MemberLocation(ray.get_runtime_context().get_node_id(), socket.gethostname(), os.getpid())

    def reset(self, seed: int | None, options: dict[str, Any] | None) -> tuple[Any, dict[str, Any]]:
        """``env.reset``."""
        return self.env.reset(seed=seed, options=options)

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        """``env.step``."""
        return self.env.step(action)

    def close(self) -> None:
        """``env.close`` (the desktop and its processes)."""
        self.env.close()


class RayVectorEnv(gym.vector.VectorEnv):
    """A vector env whose members are Ray actors, stepped concurrently; autoreset off.

    ``reset`` takes a seed (int: ``seed + i`` per member, as Gymnasium's vector envs) or a
    list of seeds, and options for all members (a dict) or one dict per member (a list).
    ``info`` is stacked key by key as in ``SyncVectorEnv``.
    """

    def __init__(
        self, env_fns: Sequence[Callable[[], gym.Env]], placement: RayPlacement | None = None
    ) -> None:
        """Starts one actor per factory and builds every member's env (concurrently).

        Raises:
            ConfigError: Ray is not installed.
            RayMemberError: A member could not be placed or its env could not be built.
        """
        try:
            import ray
        except ImportError as exc:
            raise ConfigError(
                "executor='ray' needs Ray: pip install 'grpo-trainer[ray]' (uv sync --extra ray)."
            ) from exc

        if not env_fns:
            raise ConfigError("RayVectorEnv needs at least one env factory.")
        self.placement = placement or RayPlacement()
        self.env_fns = list(env_fns)
        self.num_envs = len(self.env_fns)
        self._ray = ray
        self.actors: list[Any] = []
        try:
            self.actors = [self._start(i) for i in range(self.num_envs)]
            spaces = self._get([a.spaces.remote() for a in self.actors], "building the env")
        except BaseException:
            self._kill_all()
            raise
        obs_space, act_space, metadata = spaces[0]
        self.single_observation_space, self.single_action_space = obs_space, act_space
        self.observation_space = batch_space(obs_space, self.num_envs)
        self.action_space = batch_space(act_space, self.num_envs)
        self.metadata = {**metadata, "autoreset_mode": AutoresetMode.DISABLED}
        self._last_obs: list[Any] = [None] * self.num_envs
        self._crashed: list[HeldInfo | None] = [None] * self.num_envs

    # --- actors ---------------------------------------------------------------
    def _start(self, i: int) -> Any:
        ray = self._ray
        p = self.placement
        options: dict[str, Any] = {"num_cpus": p.num_cpus, "resources": dict(p.resources)}
        if p.memory_mb:
            options["memory"] = p.memory_mb * 1024 * 1024
        node = p.node_of(i)
        if node is not None:
            from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

            options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(node, soft=False)
        return ray.remote(EnvHost).options(**options).remote(self.env_fns[i])

    def _get(self, refs: list[Any], doing: str) -> list[Any]:
        """Every result, or RayMemberError naming the first member that failed."""
        try:
            return self._ray.get(refs, timeout=self.placement.call_timeout_s)
        except self._ray.exceptions.RayError as exc:
            raise RayMemberError(
                f"A Ray member failed while {doing}: {exc}. Check that a node offers "
                f"{self.placement} (`ray status`) and has this workspace installed."
            ) from exc

    def locations(self) -> list[MemberLocation]:
        """Where each member's actor runs now."""
        return self._get([a.where.remote() for a in self.actors], "locating the members")

    def _gather(self, calls: dict[int, Any]) -> dict[int, Any]:
        """Waits for the in-flight calls under one deadline; a failed member maps to its exception."""
        ray = self._ray
        deadline = time.monotonic() + self.placement.call_timeout_s
        results: dict[int, Any] = {}
        for i, ref in calls.items():
            try:
                results[i] = ray.get(ref, timeout=max(0.0, deadline - time.monotonic()))
            except ray.exceptions.RayError as exc:
                results[i] = exc
        return results

    def _crash(self, i: int, exc: BaseException) -> HeldInfo:
        """Marks member ``i`` crashed; an actor that may still run is killed so that reset replaces it."""
        ray = self._ray
        if isinstance(exc, ray.exceptions.GetTimeoutError):
            ray.kill(self.actors[i], no_restart=True)
        crash = HeldInfo(ended=True, crash=f"{type(exc).__name__}: {exc}")
        self._crashed[i] = crash
        return crash

    def _alive(self, i: int) -> bool:
        try:
            self._ray.get(self.actors[i].where.remote(), timeout=self.placement.call_timeout_s)
        except self._ray.exceptions.RayError:
            return False
        return True

    # --- Gymnasium API ----------------------------------------------------------
    def reset(
        self,
        *,
        seed: int | list[int | None] | None = None,
        options: dict[str, Any] | list[dict[str, Any] | None] | None = None,
    ) -> tuple[Any, dict[str, Any]]:
        """Resets every member; a member whose actor died gets a new actor first."""
        seeds = _per_member_seeds(seed, self.num_envs)
        per_options = options if isinstance(options, list) else [options] * self.num_envs
        if len(per_options) != self.num_envs:
            raise ConfigError(f"options: {len(per_options)} dicts for {self.num_envs} members.")
        for i, crashed in enumerate(self._crashed):
            if crashed is not None and not self._alive(i):
                self._ray.kill(self.actors[i], no_restart=True)
                self.actors[i] = self._start(i)
        self._crashed = [None] * self.num_envs
        calls = {i: a.reset.remote(seeds[i], per_options[i]) for i, a in enumerate(self.actors)}
        observations: list[Any] = []
        infos: dict[str, Any] = {}
        for i, result in self._gather(calls).items():
            if isinstance(result, BaseException):
                obs, info = self.single_observation_space.sample(), dict(self._crash(i, result))
            else:
                obs, info = result
            self._last_obs[i] = obs
            observations.append(obs)
            infos = self._add_info(infos, info, i)
        return self._batch(observations), infos

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Steps every live member concurrently; a crashed member is held (reward 0, flags unset)."""
        per_member = list(iterate(self.action_space, actions))
        calls = {
            i: a.step.remote(per_member[i]) for i, a in enumerate(self.actors) if self._crashed[i] is None
        }
        results = self._gather(calls)
        observations: list[Any] = []
        infos: dict[str, Any] = {}
        rewards = np.zeros(self.num_envs, dtype=np.float64)
        terminated = np.zeros(self.num_envs, dtype=np.bool_)
        truncated = np.zeros(self.num_envs, dtype=np.bool_)
        for i in range(self.num_envs):
            result = results.get(i)
            if result is None:  # crashed before: held
                info: dict[str, Any] = {**(self._crashed[i] or {}), "held": True}
                obs = self._last_obs[i]
            elif isinstance(result, BaseException):
                obs, info = self._last_obs[i], dict(self._crash(i, result))
            else:
                obs, rewards[i], terminated[i], truncated[i], info = result
                self._last_obs[i] = obs
            observations.append(obs)
            infos = self._add_info(infos, info, i)
        return self._batch(observations), rewards, terminated, truncated, infos

    def _batch(self, observations: list[Any]) -> Any:
        out = create_empty_array(self.single_observation_space, n=self.num_envs, fn=np.zeros)
        return concatenate(self.single_observation_space, observations, out)  # type: ignore[arg-type]

    def close_extras(self, **kwargs: Any) -> None:
        """Closes every member's env (its desktop), then kills its actor."""
        calls = {i: a.close.remote() for i, a in enumerate(self.actors)}
        self._gather(calls)  # a dead member has nothing left to close
        self._kill_all()

    def _kill_all(self) -> None:
        for actor in self.actors:
            self._ray.kill(actor, no_restart=True)


def _per_member_seeds(seed: int | list[int | None] | None, n: int) -> list[int | None]:
    """Gymnasium's convention: None for all, ``seed + i`` from an int, or one per member."""
    if seed is None:
        return [None] * n
    if isinstance(seed, int):
        return [seed + i for i in range(n)]
    if len(seed) != n:
        raise ConfigError(f"seed: {len(seed)} seeds for {n} members.")
    return list(seed)


def _ray_executor(
    fns: Sequence[Callable[[], gym.Env]], placement: RayPlacement | None = None
) -> gym.vector.VectorEnv:
    return RayVectorEnv(fns, placement)


register_executor("ray", _ray_executor)
