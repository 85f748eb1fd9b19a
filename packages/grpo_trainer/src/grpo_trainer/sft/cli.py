"""``grpo-train sft --config FILE [--dry-run]``: the step-prefix dataset of ``[sft] runs``, and training.

The config is a ``grpo-train`` config: ``policy = "hf:PATH"`` is the model trained, ``[agent]``
how it is shown a context (its adapter), ``[model]`` / ``[engine]`` / ``[checkpoint]`` as for
GRPO, ``[sft]`` the data and schedule. ``--dry-run`` builds the dataset and prints its
summary (samples, trajectories, dropped, visual tokens per frame) without training.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from grpo_trainer.config import load_config


def main(argv: Sequence[str] | None = None) -> int:
    """Runs ``grpo-train sft``."""
    parser = argparse.ArgumentParser(prog="grpo-train sft", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--config", required=True, help="TOML or YAML run config with an [sft] section")
    parser.add_argument("--dry-run", action="store_true", help="print the dataset summary, do not train")
    args = parser.parse_args(argv)
    config = load_config(args.config)
    if not config.sft.runs:
        parser.error(
            "[sft] runs is empty: name the run directories (hybrid-agent eval --out) or "
            "exported OSWorld trees to learn from"
        )
    from grpo_trainer.model.hf_policy import HFTrainablePolicy
    from grpo_trainer.model.loading import build_policy
    from grpo_trainer.sft.dataset import SFTDataset
    from grpo_trainer.sft.trainer import SFTTrainer, total_updates

    policy = build_policy(config)
    if not isinstance(policy, HFTrainablePolicy):
        parser.error(f"policy {config.policy!r}: supervised fine-tuning trains an hf:PATH checkpoint")
    dataset = SFTDataset(policy, config.agent, config.sft, policy.module.config.image_token_id)
    summary = dataset.add_runs(config.sft.runs)
    for line in summary.lines():
        print(line)
    print(f"context rule: {config.sft.context}; optimizer updates: {total_updates(len(dataset), config.sft)}")
    if args.dry_run:
        return 0
    if not len(dataset):
        parser.error("the runs hold no sample to learn from (no successful episode, or all dropped)")
    trainer = SFTTrainer(config, policy, dataset, config.engine.output_dir)
    for metrics in trainer.train():
        print(
            f"rank {trainer.backend.rank} update {metrics['step']}: loss {metrics['sft/loss']:.4f} "
            f"lr {metrics['train/lr']:.2e}",
            flush=True,
        )
    if config.sft.export:
        print(f"exported to {trainer.run_dir / 'hf'} (hf:PATH loads it)")
    return 0
