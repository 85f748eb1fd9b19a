"""Evaluation and training take the same turn: from one state, the same prompt token ids.

A tiny random Qwen3-VL (real processor, chat template and image inputs) goes once
through ``hybrid-agent``'s evaluation runner and once through the trainer's group
rollout, both configured by one :class:`~hybrid_agent.agent_loop.AgentConfig` with
BM25 cut to one tool, so a rollout that showed every tool (what training did before the
shared loop) would fail here.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

pytest.importorskip("transformers")

import grpo_trainer  # noqa: F401  (registers the toy env)
import gymnasium as gym
import torch
from grpo_trainer.model.policy import AgentPolicy
from grpo_trainer.rollouts.group import RolloutConfig, collect_group
from grpo_trainer.rollouts.vector import make_group_env
from hybrid_agent.agent_loop import AgentConfig
from hybrid_agent.policies.base import Generation, PolicyRequest
from hybrid_agent.recorder import iter_episodes
from hybrid_agent.runner import RunConfig, Runner
from hybrid_agent.suite import SuiteTask
from tiny_vlm import tiny_vlm_policy

TOY = "grpo_trainer:ToolOrGui-v0"
AGENT = AgentConfig(context="win2+drop", top_k=1)


class _Traced:
    """The trainer's adapter as an evaluation policy, keeping each call's prompt ids."""

    def __init__(self, adapter: AgentPolicy) -> None:
        self.adapter = adapter
        self.name = adapter.name
        self.prompts: list[list[int]] = []

    def generate(self, requests: Sequence[PolicyRequest]) -> list[Generation]:
        answers = self.adapter.generate(requests)
        self.prompts += [list(a.trace.prompt_ids) for a in answers if a.trace is not None]
        return answers


def test_a_training_sample_and_an_evaluation_step_from_one_state_have_the_same_prompt_ids(tmp_path):
    policy = tiny_vlm_policy(max_new_tokens=3)  # a random model is cut off: the next state is known
    traced = _Traced(AgentPolicy(policy, "tiny-vlm", 1.0, torch.Generator().manual_seed(0)))
    config = RunConfig(policy="tiny-vlm", agent=AGENT, max_steps=2)
    Runner(config, traced, tmp_path, lambda: gym.make(TOY, max_steps=2), progress=False).evaluate(
        [SuiteTask("toy", "toy", "toy")]
    )
    (record,) = list(iter_episodes(tmp_path))

    venv = make_group_env(lambda: gym.make(TOY, max_steps=2), 2)
    try:
        rollout = RolloutConfig(group_size=2, agent=AGENT)
        episodes = collect_group(venv, policy, "toy", 0, 0, rollout, torch.Generator().manual_seed(1))
    finally:
        venv.close()

    assert record.steps[0]["shown_tools"] == ["libreoffice_calc.get_cell_value"]  # BM25 cut 2 -> 1
    compared = 0
    for episode in episodes:
        for t, sample in enumerate(episode.samples):
            assert [t.qualified_name for t in sample.tools] == record.steps[t]["shown_tools"]
            assert list(sample.prompt_ids) == traced.prompts[t]
            compared += 1
            cut_in_both = sample.finish_reason == "length" and record.steps[t]["finish_reason"] == "length"
            if not cut_in_both:  # the next states differ: the replies were executed differently
                break
    assert compared >= 2
