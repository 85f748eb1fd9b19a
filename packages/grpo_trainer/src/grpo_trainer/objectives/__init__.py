"""What training optimises: the pure, hand-checked math of GRPO.

:mod:`~grpo_trainer.objectives.rewards` (R(tau) and the post-normalisation step terms),
:mod:`~grpo_trainer.objectives.advantage` (group z-score, 1/T broadcast, group filters),
:mod:`~grpo_trainer.objectives.loss` (clipped surrogate, k3 KL) and
:mod:`~grpo_trainer.objectives.curation` (the pass-rate band that keeps the tasks worth a
group; profiling rolls out, the band itself is pure).
"""
