"""Rollouts over the group vector env: replayable contexts, crashes dropped and counted."""

import gymnasium as gym
import torch
from grpo_trainer.model.tiny import TinyPolicy
from grpo_trainer.model.toy_menu import MENU
from grpo_trainer.objectives.advantage import group_advantages
from grpo_trainer.rollouts.group import RolloutConfig, collect_group, rebuild_messages
from grpo_trainer.rollouts.vector import make_group_env
from hybrid_agent.agent_loop import AgentConfig


def _group(options=None, agent=None, seed=0):
    venv = make_group_env(lambda: gym.make("grpo_trainer:ToolOrGui-v0"), 4)
    config = RolloutConfig(group_size=4, agent=agent or AgentConfig())
    policy = TinyPolicy(MENU, seed=seed, context_bytes=100_000)  # sees the whole prompt
    episodes = collect_group(
        venv, policy, "toy", 7, 0, config, torch.Generator().manual_seed(seed), 0, options
    )
    return policy, config, episodes


def test_training_rebuilds_every_prompt_token_for_token():
    # drop-on-success replaces frames after executed tool calls: the stored plan must be replayed.
    policy, config, episodes = _group(agent=AgentConfig(context="win2+drop"))
    samples = [(e, s) for e in episodes for s in e.samples]
    assert len(samples) > 8 and any(s.past > 1 for _, s in samples)
    for episode, sample in samples:
        assert policy.encode(rebuild_messages(episode, sample, config.context)) == sample.prompt_ids


def test_every_step_is_a_sample_with_its_logprobs():
    policy, _, episodes = _group()
    for episode in episodes:
        assert episode.score in (0.0, 1.0) and episode.crash is None
        for sample in episode.samples:
            assert len(sample.response_ids) == len(sample.old_logprobs) > 0
            assert all(lp <= 0.0 for lp in sample.old_logprobs)
        lp = policy.logprobs(
            [s.prompt_ids for s in episode.samples], [s.response_ids for s in episode.samples]
        )
        stored = [sum(s.old_logprobs) for s in episode.samples]
        assert lp.sum(dim=1).tolist() == __import__("pytest").approx(stored, abs=1e-4)


def test_a_crashed_episode_is_dropped_from_the_gradient_and_counted(tmp_path):
    from grpo_trainer.rollouts.toy_env import ToolOrGuiEnv
    from grpo_trainer.rollouts.vector import HoldAfterEnd
    from gymnasium.vector import AutoresetMode, SyncVectorEnv
    from toy_setup import toy_config, toy_trainer

    members = [lambda: HoldAfterEnd(ToolOrGuiEnv(crash_at=0))] + [lambda: HoldAfterEnd(ToolOrGuiEnv())] * 7
    venv = SyncVectorEnv(members, autoreset_mode=AutoresetMode.DISABLED)
    config = toy_config(seed=1)
    trainer = toy_trainer(config, tmp_path)
    trainer.venv = venv
    group = trainer.rollout()[0]
    assert group[0].crash and "desktop died at step 0" in group[0].crash and group[0].score is None
    scored = group_advantages(group, config.reward, config.advantage)
    assert scored.crashed == 1 and group[0] not in scored.episodes
    assert scored.kept  # seed 1's untrained policy mixes successes and failures
    batch = trainer._batch([scored])
    assert len(batch["prompts"]) == sum(e.length for e in group[1:])
    metrics = trainer.train_step()
    assert metrics["rollout/crashed"] >= 1


def test_training_uses_the_stored_prompt_and_the_replay_check_catches_a_rebuild_that_differs(tmp_path):
    import dataclasses

    import pytest
    from grpo_trainer.training.trainer import ReplayMismatch
    from toy_setup import toy_config, toy_trainer

    config = toy_config(seed=1)
    trainer = toy_trainer(config, tmp_path)
    scored = [group_advantages(g, config.reward, config.advantage) for g in trainer.rollout()]
    kept = [g for g in scored if g.kept]
    assert kept
    stored = [s.prompt_ids for g in kept for e in g.episodes for s in e.samples]
    assert trainer._batch(kept)["prompts"] == stored
    # The record now disagrees with what the policy saw (a context builder that changed since
    # the rollout): training still uses the stored ids; the replay check refuses the batch.
    kept[0].episodes[0].instruction = "Put the value 6 into cell B2, then terminate."
    assert trainer._batch(kept)["prompts"] == stored
    engine = dataclasses.replace(config.engine, replay_check=True)
    checking = toy_trainer(dataclasses.replace(config, engine=engine), tmp_path / "check")
    with pytest.raises(ReplayMismatch, match="rebuilt context differs"):
        checking._batch(kept)


def _hybridcua(*actions: str) -> str:
    calls = "".join(
        f"<tool_call>\n<function=computer_use>\n<parameter=action>\nwait\n</parameter>\n<parameter=time>\n{t}\n"
        "</parameter>\n</function>\n</tool_call>\n"
        for t in actions
    )
    return f"Action: Wait.\n{calls}"


def test_hybridcua_replies_of_several_calls_take_one_env_step_each_and_the_others_hold():
    # Replies of one or two calls: every member must spend exactly its budget of 6 env steps on
    # its own calls; a member held while another runs its second call takes no step.
    venv = make_group_env(lambda: gym.make("grpo_trainer:ToolOrGui-v0", max_steps=6), 4)
    config = RolloutConfig(group_size=4, agent=AgentConfig(adapter="hybridcua", context="hybridcua"))
    policy = TinyPolicy([_hybridcua("1"), _hybridcua("1", "2")], seed=3, context_bytes=100_000)
    episodes = collect_group(venv, policy, "toy", 7, 0, config, torch.Generator().manual_seed(3), 0)
    counts = [[1 + len(s.more) for s in e.samples] for e in episodes]
    assert {c for per in counts for c in per} == {1, 2}  # both kinds of reply were sampled
    for episode, per in zip(episodes, counts, strict=True):
        assert episode.truncated and sum(per) == 6 and len(episode.samples) == len(per)
        assert len(episode.steps) == len(per) and [1 + len(s.more) for s in episode.steps] == per
    # The second call of a turn is relayed with the first into the next turn's context.
    two = next(s for e in episodes for s in e.samples[1:] if len(e.samples[s.index - 1].more) == 1)
    assert len(two.observation.parts) == 2
    for episode in episodes:
        for sample in episode.samples:
            assert policy.encode(rebuild_messages(episode, sample, config.context)) == sample.prompt_ids
