"""Import paths of modules that moved when the package was laid out by role, kept as aliases.

``import grpo_trainer.engine`` (or ``from grpo_trainer import advantage``) still works:
``import grpo_trainer`` hands this table to :func:`osworld_mcp_env.module_aliases.alias_moved_modules`
(the env's mechanism, one finder for both packages), which answers each old name with the module
at its new path (one module object) and warns once per name with a :class:`DeprecationWarning`
that names the new path. Nothing in this repository imports an old name; the table below is the
whole list, and the package README's "Package map" says which role each room has.
"""

from __future__ import annotations

# Old import path -> where the module lives now.
MOVED_MODULES: dict[str, str] = {
    "grpo_trainer.advantage": "grpo_trainer.objectives.advantage",
    "grpo_trainer.loss": "grpo_trainer.objectives.loss",
    "grpo_trainer.rewards": "grpo_trainer.objectives.rewards",
    "grpo_trainer.curation": "grpo_trainer.objectives.curation",
    "grpo_trainer.episode": "grpo_trainer.rollouts.episode",
    "grpo_trainer.rollout": "grpo_trainer.rollouts.group",
    "grpo_trainer.continuous": "grpo_trainer.rollouts.continuous",
    "grpo_trainer.async_rollout": "grpo_trainer.rollouts.async_worker",
    "grpo_trainer.vector": "grpo_trainer.rollouts.vector",
    "grpo_trainer.vector_ray": "grpo_trainer.rollouts.vector_ray",
    "grpo_trainer.tasks": "grpo_trainer.rollouts.tasks",
    "grpo_trainer.env_setup": "grpo_trainer.rollouts.env_setup",
    "grpo_trainer.toy_env": "grpo_trainer.rollouts.toy_env",
    "grpo_trainer.policy": "grpo_trainer.model.policy",
    "grpo_trainer.hf_policy": "grpo_trainer.model.hf_policy",
    "grpo_trainer.model_inputs": "grpo_trainer.model.inputs",
    "grpo_trainer.packing": "grpo_trainer.model.packing",
    "grpo_trainer.model_setup": "grpo_trainer.model.setup",
    "grpo_trainer.policy_loading": "grpo_trainer.model.loading",
    "grpo_trainer.tiny": "grpo_trainer.model.tiny",
    "grpo_trainer.toy_menu": "grpo_trainer.model.toy_menu",
    "grpo_trainer.menu_policy": "grpo_trainer.model.menu_policy",
    "grpo_trainer.engines": "grpo_trainer.model.engines",
    "grpo_trainer.engines.hf": "grpo_trainer.model.engines.hf",
    "grpo_trainer.engines.vllm": "grpo_trainer.model.engines.vllm",
    "grpo_trainer.engine": "grpo_trainer.training.trainer",
    "grpo_trainer.backend": "grpo_trainer.training.backend",
    "grpo_trainer.backend_deepspeed": "grpo_trainer.training.backend_deepspeed",
    "grpo_trainer.optim": "grpo_trainer.training.optim",
    "grpo_trainer.checkpoints": "grpo_trainer.training.checkpoints",
    "grpo_trainer.export": "grpo_trainer.training.export",
    "grpo_trainer.metrics": "grpo_trainer.training.metrics",
    "grpo_trainer.probes": "grpo_trainer.training.probes",
}
