"""``grpo-train --config FILE`` and ``grpo-train --print-defaults``.

Environment variables are read here only (``DS_ACCELERATOR`` etc. belong to DeepSpeed's
launcher); everything else comes from the config file.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from grpo_trainer.config import GRPOConfig, load_config, to_toml
from grpo_trainer.errors import ConfigError


def build_policy(config: GRPOConfig):
    """The policy a config names: ``tiny`` (in-code test policy over the toy env's menu)."""
    if config.policy == "tiny":
        from grpo_trainer.tiny import TinyPolicy
        from grpo_trainer.toy_menu import MENU

        return TinyPolicy(MENU, seed=config.engine.seed)
    raise ConfigError(
        f"policy {config.policy!r} is not trainable yet: only 'tiny' is wired (hf: checkpoints are next)."
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Runs training from a config file, resuming from its output_dir when a checkpoint is there."""
    parser = argparse.ArgumentParser(prog="grpo-train", description=__doc__.splitlines()[0])
    parser.add_argument("--config", help="TOML or YAML run config")
    parser.add_argument("--print-defaults", action="store_true", help="print every key with its default")
    args = parser.parse_args(argv)
    if args.print_defaults:
        sys.stdout.write(to_toml(GRPOConfig()))
        return 0
    if not args.config:
        parser.error("--config FILE is required (or --print-defaults)")
    config = load_config(args.config)
    if config.engine.backend != "torch":
        raise ConfigError("backend 'deepspeed' is not wired in this version; set [engine] backend = 'torch'.")
    import gymnasium as gym

    import grpo_trainer  # noqa: F401  (registers the toy env)
    from grpo_trainer.engine import Trainer
    from grpo_trainer.vector import make_group_env

    venv = make_group_env(
        lambda: gym.make(config.env_id, **config.env_kwargs),
        config.rollout.group_size,
        config.rollout.asynchronous,
    )
    trainer = Trainer(config, build_policy(config), venv, config.engine.output_dir)
    for metrics in trainer.train():
        print(
            f"step {metrics['step']}: reward {metrics['rollout/reward']:.3f} "
            f"success {metrics['rollout/success']:.2f} adoption {metrics['rollout/adoption']:.2f} "
            f"loss {metrics.get('train/loss', float('nan')):.4f}",
            flush=True,
        )
    venv.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
