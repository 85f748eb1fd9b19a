"""Greedy probes through the evaluation runner: recorded, deterministic, split over ranks."""

import gymnasium as gym
import pytest
from grpo_trainer.errors import ConfigError
from grpo_trainer.model.tiny import TinyPolicy
from grpo_trainer.model.toy_menu import MENU
from grpo_trainer.training.probes import ProbeSettings, probe_metrics, rank_share, run_probe
from hybrid_agent.recorder import iter_episodes
from hybrid_agent.suite import SuiteTask

TASKS = [SuiteTask(f"toy-{i}", "toy", "toy") for i in range(4)]
SETTINGS = ProbeSettings(every=1, max_steps=6)


def _env():
    return gym.make("grpo_trainer:ToolOrGui-v0", max_steps=6)


def _actions(run_dir):
    return {r.task_id: [s.get("raw") or s.get("text") for s in r.steps] for r in iter_episodes(run_dir)}


def test_a_probe_is_an_evaluation_run_of_the_policy(tmp_path):
    policy = TinyPolicy(MENU, seed=1)
    policy.train()
    run_dir = run_probe(policy, 5, SETTINGS, tmp_path, _env, tasks=TASKS)
    assert run_dir == tmp_path / "step_5" / "rank0"
    assert policy.training  # eval mode only during the probe
    records = list(iter_episodes(run_dir))
    assert sorted(r.task_id for r in records) == [t.task_id for t in TASKS]
    assert all(r.header["policy"] == "grpo-step-5" for r in records)
    values = probe_metrics([run_dir])
    scores = [r.end["score"] for r in records]
    assert values["probe/episodes"] == 4 and values["probe/errors"] == 0
    assert values["probe/accuracy"] == pytest.approx(sum(scores) / len(scores))
    assert 0.0 <= values["probe/malformed"] <= 1.0


def test_greedy_probes_of_the_same_weights_give_the_same_episodes(tmp_path):
    policy = TinyPolicy(MENU, seed=2)
    first = run_probe(policy, 1, SETTINGS, tmp_path / "a", _env, tasks=TASKS)
    again = run_probe(policy, 1, SETTINGS, tmp_path / "b", _env, tasks=TASKS)
    assert _actions(first) == _actions(again)
    assert probe_metrics([first]) == probe_metrics([again])


def test_ranks_probe_disjoint_shares_whose_metrics_add_up(tmp_path):
    assert [t.task_id for t in rank_share(TASKS, 0, 2)] == ["toy-0", "toy-2"]
    assert [t.task_id for t in rank_share(TASKS, 1, 2)] == ["toy-1", "toy-3"]
    policy = TinyPolicy(MENU, seed=3)
    whole = run_probe(policy, 2, SETTINGS, tmp_path / "one", _env, tasks=TASKS)
    two = tmp_path / "two"
    shards = [run_probe(policy, 2, SETTINGS, two, _env, rank=r, world_size=2, tasks=TASKS) for r in (0, 1)]
    assert probe_metrics(shards) == probe_metrics([whole])


def test_bad_settings_fail_by_name():
    with pytest.raises(ConfigError, match="every must be >= 0"):
        ProbeSettings(every=-1)


def test_training_probes_every_n_steps_and_logs_the_metrics(tmp_path):
    from dataclasses import replace

    from toy_setup import toy_config, toy_trainer

    config = replace(toy_config(steps=2), probe=ProbeSettings(every=2, tasks=("toy-a", "toy-b"), max_steps=6))
    logs = toy_trainer(config, tmp_path).train()
    assert "probe/accuracy" not in logs[0]  # after step 1: no probe
    assert logs[1]["probe/episodes"] == 2 and "probe/accuracy" in logs[1] and logs[1]["time/probe_s"] > 0
    records = list(iter_episodes(tmp_path / "probes" / "step_2" / "rank0"))
    assert logs[1]["probe/accuracy"] == pytest.approx(sum(r.end["score"] for r in records) / len(records))
