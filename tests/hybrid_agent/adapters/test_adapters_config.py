"""--adapter and friends on the eval CLI, and the trainer's [agent] section taking the same fields."""

import pytest
from grpo_trainer.config import GRPOConfig
from grpo_trainer.errors import ConfigError as TrainerConfigError
from hybrid_agent.adapters import adapter_names
from hybrid_agent.agent_loop import AgentConfig, AgentLoop
from hybrid_agent.cli import main
from hybrid_agent.errors import ConfigError


def test_eval_help_lists_every_adapter_and_the_pixel_and_retry_flags(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "1000")  # no wrapping inside hyphenated names
    with pytest.raises(SystemExit) as exit_info:
        main(["eval", "--help"])
    assert exit_info.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    for name in adapter_names():
        assert name in text
    for flag in ("--adapter", "--min-pixels", "--max-pixels", "--parse-retries", "--coordinates"):
        assert flag in text


def test_an_unknown_adapter_is_refused_by_the_cli(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["eval", "--policy", "scripted", "--out", "x", "--adapter", "qwen9"])
    assert exit_info.value.code == 2 and "invalid choice: 'qwen9'" in capsys.readouterr().err


def test_agent_config_overrides_reach_the_adapter():
    loop = AgentLoop(
        AgentConfig(adapter="qwen2.5-vl", max_pixels=28 * 28 * 1280, coordinates="absolute_resized")
    )
    assert loop.adapter.name == "qwen2.5-vl" and loop.coordinates.max_pixels == 1003520
    assert loop.adapter.space((1920, 1080)) == (1316, 728)
    with pytest.raises(ConfigError, match="parse_retries"):
        AgentConfig(parse_retries=-1)
    with pytest.raises(ConfigError, match="min_pixels <= max_pixels"):
        AgentConfig(adapter="opencua", min_pixels=100, max_pixels=10)


def test_the_trainer_agent_section_takes_the_adapter_and_refuses_parse_retries():
    config = GRPOConfig.from_dict({"agent": {"adapter": "ui-tars-1.5", "max_pixels": 1003520}})
    assert (
        config.agent.adapter == "ui-tars-1.5"
        and config.agent.make_adapter().coordinates.max_pixels == 1003520
    )
    assert GRPOConfig.from_dict(config.to_dict()) == config  # round-trips through the file shape
    with pytest.raises(TrainerConfigError, match="parse_retries must be 0 for training"):
        GRPOConfig.from_dict({"agent": {"parse_retries": 5}})
