"""Adapters inside the agent loop: parse repair by re-sampling, out_of_space refused, prompt and frames.

The env is ``grpo_trainer``'s ToolOrGui toy (the desktop env's interface): these tests
are about how the loop reads replies, which no desktop changes.
"""

from __future__ import annotations

import grpo_trainer  # noqa: F401  (registers the toy env)
import gymnasium as gym
import pytest
from grpo_trainer.model.toy_menu import CLICK, TERMINATE
from grpo_trainer.rollouts.toy_env import SIZE
from hybrid_agent.agent_loop import AgentConfig, AgentEpisode, AgentLoop
from hybrid_agent.errors import RegistryError
from hybrid_agent.messages import images_of
from hybrid_agent.policies.base import Generation, PolicyRequest

TOY = "grpo_trainer:ToolOrGui-v0"


@pytest.fixture
def env():
    env = gym.make(TOY, max_steps=6)
    yield env
    env.close()


def _start(env: gym.Env) -> AgentEpisode:
    obs, info = env.reset(seed=0)
    return AgentEpisode.start("toy", 0, obs, info)


class _Answers:
    """Replies handed out in order to each re-sample; counts the requests it got."""

    def __init__(self, *texts: str) -> None:
        self.texts = list(texts)
        self.requests: list[PolicyRequest] = []

    def __call__(self, request: PolicyRequest) -> Generation:
        self.requests.append(request)
        return Generation(text=self.texts.pop(0), output_tokens=7, latency_s=0.5)


def test_a_malformed_reply_is_resampled_and_every_failed_attempt_is_recorded(env):
    loop = AgentLoop(AgentConfig(parse_retries=5))
    episode = _start(env)
    answers = _Answers("still no call", TERMINATE)
    turn = loop.observe(episode)
    outcome = loop.step(env, episode, turn, Generation(text="no call here", latency_s=0.5), answers)
    assert outcome.ended and outcome.end is not None and outcome.end["claimed_success"] is True
    assert [a["model_output"] for a in outcome.record["parse_attempts"]] == ["no call here", "still no call"]
    assert [a["parse"]["code"] for a in outcome.record["parse_attempts"]] == ["no_tool_call"] * 2
    assert outcome.record["model_output"] == TERMINATE and outcome.record["parse"]["ok"] is True
    assert answers.requests == [turn.request, turn.request]  # the same turn asked again
    assert outcome.record["timings"]["policy_s"] == pytest.approx(1.5)  # every attempt's time counts
    assert outcome.end["steps"] == 1  # retries are not env steps


def test_after_the_last_retry_the_step_counts_as_malformed(env):
    loop = AgentLoop(AgentConfig(parse_retries=2))
    episode = _start(env)
    answers = _Answers("bad 1", "bad 2", TERMINATE)
    outcome = loop.step(env, episode, loop.observe(episode), Generation(text="bad 0"), answers)
    assert not outcome.ended and outcome.call is None
    assert outcome.record["parse"]["code"] == "no_tool_call" and outcome.record["model_output"] == "bad 2"
    assert len(outcome.record["parse_attempts"]) == 2 and answers.texts == [TERMINATE]
    assert episode.calls == 1 and episode.feedback.startswith("Error [no_tool_call]")


def test_without_retries_nothing_is_resampled(env):
    loop = AgentLoop(AgentConfig())
    episode = _start(env)
    answers = _Answers(TERMINATE)
    outcome = loop.step(env, episode, loop.observe(episode), Generation(text="bad"), answers)
    assert outcome.record["parse"]["code"] == "no_tool_call" and "parse_attempts" not in outcome.record
    assert answers.requests == []


def test_an_out_of_space_point_executes_nothing_and_keeps_the_raw_reply(env):
    loop = AgentLoop(AgentConfig())
    episode = _start(env)
    wild = CLICK.replace("[500, 500]", "[500, 1500]")
    outcome = loop.step(env, episode, loop.observe(episode), Generation(text=wild))
    assert outcome.record["parse"]["code"] == "out_of_space" and "action" not in outcome.record
    assert outcome.record["model_output"] == wild and episode.steps == []


def test_the_sent_click_is_in_screen_pixels_and_the_history_keeps_the_model_space(env):
    loop = AgentLoop(AgentConfig())
    episode = _start(env)
    outcome = loop.step(env, episode, loop.observe(episode), Generation(text=CLICK))
    centre = round(500 * SIZE / 1000)
    assert outcome.record["action"]["arguments"]["coordinate"] == [centre, centre]
    assert outcome.record["parse"]["call"]["arguments"]["coordinate"] == [500, 500]
    assert episode.steps[0].call.arguments["coordinate"] == [500, 500]


def test_the_adapter_decides_the_prompt_resolution_and_the_frame_size(env):
    episode = _start(env)
    grid = AgentLoop(AgentConfig()).observe(episode).request.messages
    assert "resolution is 1000x1000" in grid[0]["content"]
    resized = AgentLoop(AgentConfig(adapter="qwen2.5-vl")).observe(episode).request.messages
    assert SIZE == 16  # 16x16 is under min_pixels 3,136: smart_resize scales it up to 56x56
    side = 56
    assert f"resolution is {side}x{side}" in resized[0]["content"]
    assert {image.size for image in images_of(resized)} == {(side, side)}


def test_an_unknown_adapter_fails_when_the_config_is_made():
    with pytest.raises(RegistryError, match="Unknown model adapter 'qwen9'"):
        AgentConfig(adapter="qwen9")
