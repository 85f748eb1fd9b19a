"""Where step samples come from: envs, tasks and the rollouts that record every model call.

:mod:`~grpo_trainer.rollouts.episode` (what a rollout keeps),
:mod:`~grpo_trainer.rollouts.group` (G rollouts of one task in lockstep),
:mod:`~grpo_trainer.rollouts.continuous` (every episode its own job),
:mod:`~grpo_trainer.rollouts.async_worker` (rollouts overlapping updates),
:mod:`~grpo_trainer.rollouts.vector` and :mod:`~grpo_trainer.rollouts.vector_ray` (group
vector envs, local or in Ray actors), :mod:`~grpo_trainer.rollouts.tasks` (which task each
group trains on), :mod:`~grpo_trainer.rollouts.env_setup` (the envs' ``gym.make`` arguments)
and :mod:`~grpo_trainer.rollouts.toy_env` (the fast ToolOrGui env).
"""
