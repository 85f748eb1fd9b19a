import json
import tomllib
from pathlib import Path

import pytest
from grpo_trainer.cli import main
from grpo_trainer.config import GRPOConfig, LoraSettings, RolloutSettings, load_config, to_toml
from grpo_trainer.errors import ConfigError

ROOT = Path(__file__).parents[2]


def test_defaults_are_the_studys_table_6():
    c = GRPOConfig()
    assert (c.rollout.group_size, c.optim.lr, c.optim.schedule, c.optim.warmup_steps) == (
        8,
        5e-6,
        "cosine",
        0,
    )
    assert (c.optim.clip_eps, c.optim.kl_beta, c.optim.grad_clip, c.optim.updates_per_batch) == (
        0.2,
        0.02,
        1.0,
        4,
    )
    assert (c.reward.max_steps, c.reward.lambda_len, c.reward.lambda_cap, c.reward.lambda_mcp) == (
        50,
        0.05,
        0.2,
        0.1,
    )
    assert (c.advantage.acc_lo, c.advantage.acc_hi) == (0.05, 0.95)
    assert (c.engine.seed, c.engine.zero_stage, c.engine.precision, c.engine.max_staleness) == (
        10086,
        3,
        "bf16",
        2,
    )


def test_print_defaults_round_trips(capsys, tmp_path):
    assert main(["--print-defaults"]) == 0
    text = capsys.readouterr().out
    assert text == to_toml(GRPOConfig())
    path = tmp_path / "c.toml"
    path.write_text(text)
    assert load_config(path) == GRPOConfig()


@pytest.mark.parametrize("name", ["grpo_tiny_cpu.toml", "grpo_qwen3vl_gpu.toml"])
def test_example_configs_load(name):
    config = load_config(ROOT / "examples" / name)
    assert tomllib.loads((ROOT / "examples" / name).read_text())
    assert config.rollout.group_size == 8


def test_yaml_and_unknown_keys(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("optim:\n  lr: 1.0e-5\nreward:\n  lambda_mcp: 0.0\n")
    config = load_config(path)
    assert config.optim.lr == 1e-5 and config.reward.lambda_mcp == 0.0
    path.write_text("optim:\n  lr_: 1.0\n")
    with pytest.raises(ConfigError, match="Did you mean 'lr'"):
        load_config(path)


def test_profile_tasks_writes_the_verdicts_without_training(tmp_path, capsys):
    config = tmp_path / "c.toml"
    config.write_text(
        'policy = "tiny"\ntasks = ["toy", "toy"]\n[rollout]\ngroup_size = 4\n[reward]\nmax_steps = 6\n'
        f'[curation]\nlow = 0.0\nhigh = 1.0\n[engine]\nbackend = "torch"\noutput_dir = "{tmp_path / "run"}"\n'
    )
    out = tmp_path / "profile.json"
    assert main(["--config", str(config), "--profile-tasks", str(out)]) == 0
    profile = json.loads(out.read_text())
    assert [t["scored"] + t["crashed"] for t in profile["tasks"]] == [4, 4]
    # The band (0, 1) keeps exactly the tasks with both outcomes among their 4 rollouts.
    assert profile["kept"] == [t["task"] for t in profile["tasks"] if 0 < t["successes"] < t["scored"]]
    assert "tasks kept" in capsys.readouterr().out
    assert not (tmp_path / "run" / "checkpoints").exists()  # nothing trained


def test_model_section_reads_a_lora_table_with_defaults_and_round_trips(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text('policy = "hf:/m"\n[model]\nlora = { r = 8, target_modules = ["q_proj"] }\n')
    config = load_config(path)
    assert config.model.lora == LoraSettings(r=8, target_modules=("q_proj",))  # alpha, dropout: defaults
    assert config.model.checkpointing(config.policy)  # unset: on for an hf: checkpoint
    path.write_text(to_toml(config))
    assert load_config(path) == config
    path.write_text("[model]\nlora = { alpah = 8 }\n")
    with pytest.raises(ConfigError, match="Did you mean 'alpha'"):
        load_config(path)
    with pytest.raises(ConfigError, match="r >= 1"):
        LoraSettings(r=0)


def test_rollout_desktops_trains_continuously_from_the_cli(tmp_path, monkeypatch):
    from grpo_trainer.training import trainer as engine

    built = []

    class Recorded(engine.ContinuousRollouts):
        def __init__(self, desktops, *args, **kwargs):
            built.append(len(desktops))
            super().__init__(desktops, *args, **kwargs)

    monkeypatch.setattr(engine, "ContinuousRollouts", Recorded)
    config = tmp_path / "c.toml"
    config.write_text(
        'policy = "tiny"\ntasks = ["toy", "toy"]\n'
        "[rollout]\ngroup_size = 4\ntasks_per_step = 2\ndesktops = 3\n"
        "[reward]\nmax_steps = 6\n[optim]\ntotal_steps = 1\n"
        f'[engine]\nbackend = "torch"\noutput_dir = "{tmp_path / "run"}"\n'
    )
    assert main(["--config", str(config)]) == 0
    assert built == [3]  # three desktops for groups of four: only continuous rollouts can do that
    steps = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [s["step"] for s in steps] == [0] and len(steps[0]["rollout/tasks"]) == 2


def test_rollout_desktops_run_here_or_in_ray_actors_not_in_subprocesses_and_not_negative():
    assert RolloutSettings(desktops=2, executor="ray").executor == "ray"
    with pytest.raises(ConfigError, match=r"subprocess per desktop \('async'\) adds no concurrency"):
        RolloutSettings(desktops=2, executor="async")
    with pytest.raises(ConfigError, match="desktops must be >= 0"):
        RolloutSettings(desktops=-1)
