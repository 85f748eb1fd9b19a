"""The training loop and what it stands on: backends, optimizer, checkpoints, metrics, export.

:mod:`~grpo_trainer.training.trainer` (the :class:`Trainer`: rollouts -> advantages ->
updates, exact checkpoints), :mod:`~grpo_trainer.training.backend` and
:mod:`~grpo_trainer.training.backend_deepspeed` (plain torch or DeepSpeed ZeRO),
:mod:`~grpo_trainer.training.optim` (AdamW and the cosine schedule),
:mod:`~grpo_trainer.training.checkpoints` (the newest complete checkpoint, rotation),
:mod:`~grpo_trainer.training.metrics` (JSONL and TensorBoard),
:mod:`~grpo_trainer.training.probes` (greedy probes on a held-out split) and
:mod:`~grpo_trainer.training.export` (a checkpoint as a Hugging Face directory).
"""
