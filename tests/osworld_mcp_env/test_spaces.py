"""The spaces say what the env returns and accepts; registration keeps Gymnasium's checker on.

No desktop here: constructing the env starts none (the first ``reset`` does).
"""

from __future__ import annotations

import json
import pickle

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector.utils import batch_space
from gymnasium.wrappers import PassiveEnvChecker, TimeLimit
from osworld_mcp_env.actions import ActionLimits
from osworld_mcp_env.env.step_limit import TimeLimitAsMaxSteps
from osworld_mcp_env.spaces import (
    INSTRUCTION_MAX_CHARS,
    TOOL_RESULT_MAX_CHARS,
    CallSpace,
    action_space,
    fit_text_fields,
    observation_space,
)
from osworld_mcp_env.text import TRUNCATION_MARKER

ENV_ID = "osworld_mcp_env:OSWorldMCP-v0"
MARKER_HEAD = TRUNCATION_MARKER.split("{")[0]
CLICK = {"name": "computer_use", "arguments": {"action": "left_click", "coordinate": [1, 2]}}


def observation(space, **texts) -> dict:
    height, width = space["screenshot"].shape[:2]
    obs = {"screenshot": np.zeros((height, width, 3), np.uint8), "tool_result": "", "active_app": ""}
    return {**obs, "instruction": "Do it.", **texts}


def test_every_text_field_is_cut_to_its_declared_bound_with_the_marker():
    space = observation_space(64, 48, with_a11y=True)
    long = {
        "instruction": "i" * 9_000,
        "tool_result": "r" * 100_000,
        "active_app": "a" * 1_000,
        "a11y_tree": "<x/>" * 600_000,
    }
    raw = observation(space, **long)
    assert not space.contains(raw)  # unbounded, the observation would lie about its space
    obs = fit_text_fields(dict(raw), space)
    assert space.contains(obs)
    for key, text in long.items():
        # The bound is used, not undercut: only the marker's count may be a digit shorter.
        assert space[key].max_length - 2 <= len(obs[key]) <= space[key].max_length, key
        assert MARKER_HEAD in obs[key] and obs[key].startswith(text[:100]), key
    assert len(obs["instruction"]) <= INSTRUCTION_MAX_CHARS
    assert len(obs["tool_result"]) <= TOOL_RESULT_MAX_CHARS
    assert obs["screenshot"] is raw["screenshot"]


def test_text_within_its_bound_is_left_as_it_is():
    space = observation_space(64, 48, with_a11y=False)
    raw = observation(space, tool_result="[exit code 0]\nok\n", active_app="libreoffice_calc")
    assert fit_text_fields(dict(raw), space) == raw


def test_the_action_space_holds_calls_as_text_or_mappings():
    space = action_space()
    for call in (CLICK, json.dumps(CLICK), {"name": "os.calculator"}, '{"name": "bash", "arguments": {}}'):
        assert space.contains(call), call
    for not_a_call in (
        "left_click 1 2",
        "[]",
        '{"arguments": {}}',
        {"name": "", "arguments": {}},
        {"name": "computer_use", "arguments": [1, 2]},
        {"name": 5},
        '{"name": "x", "arguments": {"a": NaN}}',
        None,
        7,
        b'{"name": "x"}',
    ):
        assert not space.contains(not_a_call), not_a_call


def test_the_payload_limit_is_the_envs_action_limits():
    limits = ActionLimits(max_payload_chars=100)
    env = gym.make(ENV_ID, limits=limits)
    try:
        space = env.action_space
        assert isinstance(space, CallSpace) and space.limits is env.unwrapped.config.limits
        fits = {"name": "bash", "arguments": {"command": "x" * 50}}
        too_long = {"name": "bash", "arguments": {"command": "x" * 100}}
        assert space.contains(fits) and space.contains(json.dumps(fits))
        assert not space.contains(too_long) and not space.contains(json.dumps(too_long))
        assert action_space().limits.max_payload_chars == ActionLimits().max_payload_chars
    finally:
        env.close()


def test_samples_are_well_formed_calls_that_name_no_tool_and_repeat_under_a_seed():
    first, second = action_space(), action_space()
    first.seed(7)
    second.seed(7)
    samples = [first.sample() for _ in range(50)]
    assert samples == [second.sample() for _ in range(50)]
    assert all(first.contains(s) for s in samples)
    assert all(s["name"].count(".") == 1 and s["name"] != "computer_use" for s in samples)
    assert len({s["name"] for s in samples}) == 50


def test_the_action_space_batches_pickles_and_compares_by_its_limits():
    space = action_space(ActionLimits(max_payload_chars=500))
    assert pickle.loads(pickle.dumps(space)) == space
    assert space != action_space() and space == action_space(ActionLimits(max_payload_chars=500))
    batched = batch_space(space, 3)
    assert len(batched.spaces) == 3 and all(s == space for s in batched.spaces)


def test_registration_keeps_the_env_checker_on():
    env = gym.make(ENV_ID)
    try:
        chain = []
        layer = env
        while isinstance(layer, gym.Wrapper):
            chain.append(type(layer))
            layer = layer.env
        assert PassiveEnvChecker in chain and TimeLimit not in chain
    finally:
        env.close()


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"max_episode_steps": 2}, 2),
        ({"max_steps": 10, "max_episode_steps": 3}, 3),
        ({"max_steps": 2, "max_episode_steps": 5}, 2),
        ({"max_steps": 7}, 7),
    ],
)
def test_max_episode_steps_becomes_the_envs_own_max_steps(kwargs, expected):
    env = gym.make(ENV_ID, **kwargs)
    try:
        assert env.unwrapped.config.max_steps == expected
        assert isinstance(env, TimeLimitAsMaxSteps)
        again = gym.make(env.spec)  # a spec re-made keeps the limit
        try:
            assert again.unwrapped.config.max_steps == expected
        finally:
            again.close()
    finally:
        env.close()
