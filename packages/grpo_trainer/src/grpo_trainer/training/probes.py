"""Greedy probes: the policy under training, evaluated on a held-out split every N steps.

A probe is an evaluation, not a rollout: it goes through ``hybrid_agent``'s
:class:`~hybrid_agent.runner.Runner`, so its episodes are recorded as any
evaluation's are (``run.json``, one JSONL per episode, screenshots) and its
numbers are the behavioural metrics of :mod:`hybrid_agent.metrics` computed by
the same code that reports a released checkpoint: accuracy with its standard
error, tool adoption, TIR, false successes, malformed outputs. Decoding is
greedy (temperature 0) unless configured otherwise, so two probes of the same
weights give the same episodes and a change between probes is the training's.

Under several ranks each rank probes its share of the tasks (task ``i`` on rank
``i % world_size``) into its own directory; :func:`probe_metrics` reads them all.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import torch
from hybrid_agent import metrics
from hybrid_agent.agent_loop import AgentConfig
from hybrid_agent.recorder import iter_episodes
from hybrid_agent.suite import SuiteTask, load_suite, load_tasks
from osworld_mcp_env.tasks.templates import TRAIN_SEEDS, is_instance_id, parse_instance_id

from grpo_trainer.errors import ConfigError
from grpo_trainer.model.policy import AgentPolicy, TrainablePolicy


@dataclass(frozen=True)
class ProbeSettings:
    """When and on what the policy is probed.

    Attributes:
        every: Training steps between probes (0: never). A probe runs after steps
            ``every``, ``2 * every``, ...
        suite: The held-out tasks, as ``hybrid_agent``'s suite specs read them
            (``seeded:test``, a split file, a directory of task JSONs).
        tasks: Task ids or suite specs probed instead of ``suite`` when given (an id the
            OSWorld loader does not know goes to the env as is). A template seed must be
            held out (``TEMPLATE@SEED`` with SEED outside ``TRAIN_SEEDS``).
        max_steps: Steps per probe episode.
        envs: Envs each rank steps at once.
        temperature: 0 is greedy.
        seed: Seed of the sampler when ``temperature > 0``.
    """

    every: int = 0
    suite: str = "seeded:test"
    tasks: tuple[str, ...] = ()
    max_steps: int = 15
    envs: int = 1
    temperature: float = 0.0
    seed: int = 0

    def __post_init__(self) -> None:
        if self.every < 0 or self.max_steps < 1 or self.envs < 1 or self.temperature < 0:
            raise ConfigError(
                "probe: every must be >= 0, max_steps and envs >= 1, temperature >= 0; got "
                f"{self.every}, {self.max_steps}, {self.envs}, {self.temperature}."
            )


def probe_tasks(settings: ProbeSettings) -> list[SuiteTask]:
    """The held-out tasks: ``settings.tasks`` when given, else ``settings.suite`` resolved.

    Raises:
        ConfigError: A template instance with a seed training draws from.
    """
    tasks = load_tasks(settings.tasks, pass_unknown=True) if settings.tasks else load_suite(settings.suite)
    trained = [
        t.task_id
        for t in tasks
        if is_instance_id(t.task_id) and parse_instance_id(t.task_id)[1] in TRAIN_SEEDS
    ]
    if trained:
        raise ConfigError(
            f"probe: {trained} use training seeds (>= {TRAIN_SEEDS.start}); probe held-out seeds."
        )
    return tasks


def rank_share(tasks: Sequence[SuiteTask], rank: int, world_size: int) -> list[SuiteTask]:
    """The tasks rank ``rank`` probes: every ``world_size``-th one from ``rank`` on."""
    return list(tasks[rank::world_size])


def run_probe(
    policy: TrainablePolicy,
    step: int,
    settings: ProbeSettings,
    out_dir: str | Path,
    env_factory: Callable[[], gym.Env],
    *,
    agent: AgentConfig | None = None,
    rank: int = 0,
    world_size: int = 1,
    tasks: Sequence[SuiteTask] | None = None,
) -> Path:
    """Evaluates the policy on this rank's share of the held-out tasks; returns the run directory.

    Args:
        policy: The policy being trained (its module is put in eval mode for the probe).
        step: The training step, in the run's name.
        settings: What to probe and how.
        out_dir: Probes go to ``out_dir/step_<step>/rank<rank>``.
        env_factory: Builds one env (the trainer's ``env_id`` and kwargs, max steps set).
        agent: What the model is shown and how its reply is read: the rollouts' settings.
        rank: This rank.
        world_size: Ranks probing together.
        tasks: The held-out tasks (default: :func:`probe_tasks`).
    """
    # The runner brings the desktop env's stack (MCP client, evaluators): imported when a probe runs,
    # so a trainer on another env (the toy env, a GPU machine without that stack) never needs it.
    from hybrid_agent.runner import RunConfig, Runner

    tasks = rank_share(probe_tasks(settings) if tasks is None else tasks, rank, world_size)
    run_dir = Path(out_dir) / f"step_{step}" / f"rank{rank}"
    config = RunConfig(
        policy=f"grpo-step-{step}",
        suite=settings.suite,
        agent=agent or AgentConfig(),
        max_steps=settings.max_steps,
        envs=settings.envs,
        save_screenshots=False,
    )
    generator = torch.Generator().manual_seed(settings.seed)
    adapter = AgentPolicy(policy, config.policy, settings.temperature, generator)
    module = policy.module
    was_training = module.training
    module.eval()
    try:
        Runner(config, adapter, run_dir, env_factory, progress=False).evaluate(tasks)
    finally:
        module.train(was_training)
    return run_dir


def probe_metrics(run_dirs: Sequence[str | Path]) -> dict[str, Any]:
    """The probe's behavioural metrics over the episodes of every rank's directory.

    Keys are ``probe/...``; a metric without data (no scored episode, no tool-reachable
    task) is left out rather than logged as 0.
    """
    episodes = [metrics.episode_stats(record) for run_dir in run_dirs for record in iter_episodes(run_dir)]
    values: dict[str, Any] = {
        "probe/episodes": len(episodes),
        "probe/errors": sum(ep.error is not None for ep in episodes),
    }
    accuracy = metrics.accuracy(episodes)
    if accuracy is not None:
        values["probe/accuracy"] = accuracy.mean
    for name, fn in (
        ("adoption", metrics.adoption),
        ("tir_real", metrics.tir_real),
        ("false_success", metrics.false_success_rate),
        ("malformed", metrics.malformed_rate),
        ("hit_cap", metrics.hit_cap_rate),
    ):
        value = fn(episodes)
        if value is not None:
            values[f"probe/{name}"] = value
    return values
