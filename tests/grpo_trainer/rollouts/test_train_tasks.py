"""The trainer's tasks: suite specs read as evaluation reads them, fresh template seeds, example configs."""

from __future__ import annotations

import importlib
import json
import re
from dataclasses import replace
from pathlib import Path

import gymnasium as gym
import pytest
from grpo_trainer import cli
from grpo_trainer.config import RolloutSettings, load_config
from grpo_trainer.rollouts.tasks import group_task, resolve_tasks, train_seed
from grpo_trainer.training.probes import ProbeSettings, probe_tasks
from grpo_trainer.training.trainer import group_index
from hybrid_agent.errors import ConfigError as AgentConfigError
from hybrid_agent.suite import UnknownSuite
from osworld_mcp_env.tasks import load_task
from osworld_mcp_env.tasks.templates import HELD_OUT_SEEDS, TRAIN_SEEDS
from toy_setup import toy_config, toy_trainer

ROOT = Path(__file__).parents[3]
OSWORLD = "osworld_mcp_env:OSWorldMCP-v0"
EXAMPLES = sorted((ROOT / "examples").glob("*.toml"))


def test_train_seeds_are_pinned_and_never_held_out():
    # Pinned values: a resumed run (any process, any version of this code) must draw these.
    assert (train_seed(10086, 0), train_seed(10086, 1), train_seed(0, 0)) == (
        285054884,
        207608366,
        2079335179,
    )
    draws = [train_seed(10086, i) for i in range(200)]
    assert all(s in TRAIN_SEEDS and s not in HELD_OUT_SEEDS for s in draws)
    assert len(set(draws)) == 200
    assert not set(range(TRAIN_SEEDS.start)) - set(HELD_OUT_SEEDS)  # every seed below training's is held out


def test_templates_get_fresh_seeds_pinned_instances_and_other_tasks_stay():
    tasks = resolve_tasks(["calc-column-sum", "calc-column-sum@7", "calc-sum-column"], OSWORLD)
    picked = [group_task(tasks, i, 10086) for i in range(4)]
    assert picked == [
        "calc-column-sum@285054884",
        "calc-column-sum@7",
        "calc-sum-column",
        f"calc-column-sum@{train_seed(10086, 3)}",
    ]
    assert picked[3] != picked[0]
    assert load_task(picked[0]).id == picked[0]


def test_suite_specs_expand_and_seeded_train_draws_only_training_instances():
    tasks = resolve_tasks(["seeded:train", "bundled"], OSWORLD)
    assert len(tasks) == 50 + 3
    drawn = [group_task(tasks, i, 1) for i in range(len(tasks))]
    seeded = [t for t in drawn[:50] if "@" in t]
    assert len(seeded) == 50 and all(int(t.partition("@")[2]) >= TRAIN_SEEDS.start for t in seeded)
    assert drawn[50:] == ["calc-sum-column", "writer-replace-word", "os-create-file"]


def test_unknown_entries_raise_on_the_desktop_env_and_pass_through_on_the_toy_env():
    with pytest.raises(UnknownSuite, match=re.escape("Did you mean 'calc-sum-column'?")):
        resolve_tasks(["calc-sum-colum"], OSWORLD)
    with pytest.raises(AgentConfigError, match="'train' or 'test'"):
        resolve_tasks(["seeded:dev"], "grpo_trainer:ToolOrGui-v0")  # a bad suite is never passed through
    assert [t.source for t in resolve_tasks(["toy", "t1"], "grpo_trainer:ToolOrGui-v0")] == ["toy", "t1"]


def test_probes_refuse_training_seeds():
    assert [t.task_id for t in probe_tasks(ProbeSettings(tasks=("calc-column-sum@7",)))] == [
        "calc-column-sum@7"
    ]
    with pytest.raises(Exception, match="training seeds"):
        probe_tasks(ProbeSettings(tasks=("calc-column-sum@5000",)))


def test_the_trainer_logs_drawn_seeds_and_a_resumed_run_draws_the_same(tmp_path):
    config = replace(
        toy_config(steps=2),
        tasks=("calc-column-sum",),
        rollout=RolloutSettings(group_size=2, tasks_per_step=2),
    )
    whole = toy_trainer(config, tmp_path / "whole").train()
    expected = [[f"calc-column-sum@{train_seed(0, 2 * step + j)}" for j in range(2)] for step in range(2)]
    assert [m["rollout/tasks"] for m in whole] == expected
    logged = [json.loads(line) for line in (tmp_path / "whole" / "metrics.jsonl").read_text().splitlines()]
    assert [m["rollout/tasks"] for m in logged] == expected
    toy_trainer(config, tmp_path / "resumed").train_step()  # step 0, checkpointed
    resumed = toy_trainer(config, tmp_path / "resumed")
    assert resumed.step == 1
    assert resumed.train_step()["rollout/tasks"] == expected[1]


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_every_example_config_resolves_and_lists_its_tasks_without_a_model(path, capsys, monkeypatch):
    config = load_config(path)
    module, _, env_name = config.env_id.rpartition(":")
    importlib.import_module(module)  # registers the env, as gym.make does
    assert gym.spec(env_name).entry_point
    tasks = resolve_tasks(config.tasks, config.env_id)
    n = config.rollout.tasks_per_step
    first = [group_task(tasks, group_index(0, j, n, 0, 1), config.engine.seed) for j in range(n)]
    if config.env_id.startswith("osworld_mcp_env:"):
        assert all(load_task(t).supported for t in first)
    if config.probe.every:
        assert probe_tasks(config.probe)

    def no_model(_config):
        raise AssertionError("--list-tasks built a model")

    monkeypatch.setattr(cli, "build_policy", no_model)
    assert cli.main(["--config", str(path), "--list-tasks", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1:] == [f"step 0 group {j}: {task}" for j, task in enumerate(first)]


def test_the_gpu_example_trains_on_fresh_seeded_training_instances():
    config = load_config(ROOT / "examples" / "grpo_qwen3vl_gpu.toml")
    assert config.tasks == ("seeded:train",)
    first = group_task(resolve_tasks(config.tasks, config.env_id), 0, config.engine.seed)
    assert int(first.partition("@")[2]) in TRAIN_SEEDS
