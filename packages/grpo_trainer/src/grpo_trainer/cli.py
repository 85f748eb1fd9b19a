"""``grpo-train --config FILE`` (``--list-tasks``, ``--profile-tasks``), ``grpo-train --print-defaults``.

``grpo-train export --checkpoint DIR --out DIR [--merge-lora]`` writes a checkpoint as a
Hugging Face directory (:mod:`grpo_trainer.training.export`); ``grpo-train sft --config FILE [--dry-run]``
fine-tunes on recorded episodes (:mod:`grpo_trainer.sft`).

One process per rank under DeepSpeed's launcher (``deepspeed --num_gpus N --module
grpo_trainer.cli --config FILE``; see :mod:`grpo_trainer.training.backend_deepspeed` for
nodes and CPU), or one plain process. Besides the launcher's rendezvous variables,
which the DeepSpeed backend reads, the only environment inputs are ``LOCAL_RANK``
here (which GPU an ``hf:`` checkpoint loads onto) and ``LOCAL_WORLD_SIZE`` (the ranks on
this host, whose envs share its memory when prepared resets ask for it); everything
else comes from the config file.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any

from grpo_trainer.config import GRPOConfig, load_config, to_toml
from grpo_trainer.model.loading import build_policy


def main(argv: Sequence[str] | None = None) -> int:
    """Runs training from a config file, resuming from its output_dir when a checkpoint is there."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["export"]:
        from grpo_trainer.training.export import main as export_main

        return export_main(argv[1:])
    # DeepSpeed's launcher puts --local_rank=N before the module's own arguments.
    command = [arg for arg in argv if not arg.startswith("--local_rank")]
    if command[:1] == ["sft"]:
        from grpo_trainer.sft.cli import main as sft_main

        return sft_main(command[1:])
    parser = argparse.ArgumentParser(
        prog="grpo-train",
        description=(__doc__ or "").splitlines()[0],
        epilog="grpo-train export --help: a checkpoint as a Hugging Face directory (hf:PATH loads it). "
        "grpo-train sft --help: supervised fine-tuning on recorded episodes.",
    )
    parser.add_argument("--config", help="TOML or YAML run config")
    parser.add_argument("--print-defaults", action="store_true", help="print every key with its default")
    parser.add_argument(
        "--profile-tasks",
        metavar="OUT",
        help="profile the config's tasks (G sampled rollouts each, the starting policy) into OUT "
        "(JSON) and keep those whose pass rate lies in the [curation] band; no training",
    )
    parser.add_argument(
        "--list-tasks",
        nargs="?",
        const=2,
        type=int,
        metavar="STEPS",
        help="print the tasks (template seeds drawn) of the first STEPS steps (default 2) as one process "
        "runs them, by global group index (under N ranks group i runs at step i // (N * tasks_per_step)); "
        "no model, no env",
    )
    parser.add_argument("--local_rank", type=int, help=argparse.SUPPRESS)  # the launcher's; LOCAL_RANK wins
    args = parser.parse_args(argv)
    if args.print_defaults:
        sys.stdout.write(to_toml(GRPOConfig()))
        return 0
    if not args.config:
        parser.error("--config FILE is required (or --print-defaults)")
    config = load_config(args.config)
    if args.list_tasks is not None:
        return _list_tasks(config, args.list_tasks)
    import gymnasium as gym

    import grpo_trainer  # noqa: F401  (registers the toy env)
    from grpo_trainer.rollouts.env_setup import env_kwargs
    from grpo_trainer.rollouts.vector import make_group_env
    from grpo_trainer.training.trainer import Trainer

    # Every rank on this host runs its own envs, each with a prepared desktop beside it.
    envs = (config.rollout.desktops or config.rollout.group_size) * int(
        os.environ.get("LOCAL_WORLD_SIZE", "1")
    )
    kwargs = env_kwargs(config, envs)
    prepare = bool(kwargs.get("prepare_resets"))

    def make_env() -> gym.Env:
        return gym.make(config.env_id, **kwargs)

    def make_group() -> gym.vector.VectorEnv:
        return make_group_env(make_env, config.rollout.group_size, executor=config.rollout.executor)

    if args.profile_tasks:
        group = make_group()
        profiled = _profile(config, group, args.profile_tasks)
        group.close()
        return profiled
    policy = build_policy(config)
    if config.rollout.desktops:  # continuous rollouts: the Trainer makes and owns the desktops
        venv = None
        desktops = [make_env] * config.rollout.desktops
        trainer = Trainer(
            config, policy, None, config.engine.output_dir, desktops=desktops, prepare_resets=prepare
        )
    else:
        venv = make_group()
        trainer = Trainer(config, policy, venv, config.engine.output_dir, prepare_resets=prepare)
    for metrics in trainer.train():
        print(
            f"rank {trainer.backend.rank} step {metrics['step']}: reward {metrics['rollout/reward']:.3f} "
            f"success {metrics['rollout/success']:.2f} adoption {metrics['rollout/adoption']:.2f} "
            f"loss {metrics.get('train/loss', float('nan')):.4f}",
            flush=True,
        )
    if trainer.continuous is not None:
        trainer.continuous.close()
    if venv is not None:
        venv.close()
    return 0


def _list_tasks(config: GRPOConfig, steps: int) -> int:
    """``--list-tasks``: each group's reset task for the first ``steps`` steps, resolved as training does."""
    from grpo_trainer.rollouts.tasks import group_task, resolve_tasks
    from grpo_trainer.training.trainer import group_index

    tasks = resolve_tasks(config.tasks, config.env_id)
    n = config.rollout.tasks_per_step
    print(f"{len(tasks)} tasks from {list(config.tasks)}")
    for step in range(min(steps, config.optim.total_steps)):
        for j in range(n):
            index = group_index(step, j, n, rank=0, world_size=1)
            print(f"step {step} group {index}: {group_task(tasks, index, config.engine.seed)}")
    return 0


def _profile(config: GRPOConfig, venv: Any, out: str) -> int:
    """``--profile-tasks``: one group per task from the starting policy, the verdicts written to ``out``.

    The tasks are the config's entries resolved as training resolves them (suite specs,
    split files, directories, task ids; a template drawn at a training seed).
    """
    import torch

    from grpo_trainer.objectives.curation import profile_tasks, write_profile
    from grpo_trainer.rollouts.tasks import resolve_tasks
    from grpo_trainer.training.trainer import rollout_config

    profiles = profile_tasks(
        venv,
        build_policy(config),
        resolve_tasks(config.tasks, config.env_id),
        rollout_config(config),
        config.reward,
        config.curation,
        torch.Generator().manual_seed(config.engine.seed),
        seed=config.engine.seed,
    )
    for p in profiles:
        rate = "-" if p.pass_rate is None else f"{p.pass_rate:.2f}"
        verdict = "kept" if p.kept else "dropped"
        print(f"{p.task}: {p.successes}/{p.scored} (crashed {p.crashed}) p={rate} {verdict}")
    path = write_profile(profiles, out)
    print(f"{sum(p.kept for p in profiles)}/{len(profiles)} tasks kept; profile in {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
