"""The policy being trained: what it must do, how it is built, what samples its rollouts.

:mod:`~grpo_trainer.model.policy` (the trainable-policy protocol),
:mod:`~grpo_trainer.model.hf_policy` (``hf:PATH``), :mod:`~grpo_trainer.model.inputs`
(processed VLM inputs per sample), :mod:`~grpo_trainer.model.packing` (token-sized
micro-batches), :mod:`~grpo_trainer.model.setup` (LoRA, gradient checkpointing, which
weights a checkpoint holds), :mod:`~grpo_trainer.model.loading` (the policy a config
names), :mod:`~grpo_trainer.model.engines` (rollout engines: hf, vLLM) and the small
policies built in code (:mod:`~grpo_trainer.model.tiny`, :mod:`~grpo_trainer.model.toy_menu`,
:mod:`~grpo_trainer.model.menu_policy`).
"""
