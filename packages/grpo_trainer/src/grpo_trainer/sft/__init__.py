"""Supervised fine-tuning on recorded episodes: the stage before RL (HybridCUA's two-stage recipe).

:mod:`~grpo_trainer.sft.dataset` turns ``hybrid-agent eval`` run directories into
step-prefix samples rendered by the agent loop's own context code;
:mod:`~grpo_trainer.sft.trainer` trains on them with the GRPO trainer's backends,
checkpoints and export (``grpo-train sft``); :mod:`~grpo_trainer.sft.settings` is the
``[sft]`` section.
"""
