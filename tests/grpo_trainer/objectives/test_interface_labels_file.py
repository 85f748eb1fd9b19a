"""[reward] labels_file: hybrid-agent label's labels reach the interface bonus of the trainer's episodes."""

import dataclasses

import pytest

pytest.importorskip("torch")

from grpo_trainer.config import GRPOConfig
from grpo_trainer.objectives.rewards import RewardConfig, interface_unlabelled
from hybrid_agent.labels import Mode, ModeRollouts, TaskLabel, write_labels
from toy_setup import toy_config, toy_trainer

TERMS = ("outcome", "interface_preference")


def with_labels(config: GRPOConfig, labels_file) -> GRPOConfig:
    reward = RewardConfig(return_terms=TERMS, max_steps=config.reward.max_steps, labels_file=labels_file)
    return dataclasses.replace(config, reward=reward)


def test_the_labels_file_gives_the_toy_task_its_preferred_interface(tmp_path):
    modes = (ModeRollouts(Mode.GUI, 2), ModeRollouts(Mode.CLI, 2, (2, 2)), ModeRollouts(Mode.HYBRID, 2))
    path = write_labels(
        tmp_path / "labels.json", [TaskLabel("toy", 1, (Mode.CLI, Mode.GUI, Mode.HYBRID), modes)]
    )
    trainer = toy_trainer(with_labels(toy_config(steps=1), str(path)), tmp_path / "run")
    groups = trainer.rollout()
    episodes = [e for g in groups for e in g]
    assert episodes and all(e.labels["preferred_interface"] == "cli" for e in episodes)
    assert not any(interface_unlabelled(e, trainer.config.reward) for e in episodes)


def test_a_task_the_file_does_not_label_turns_its_bonus_off_and_says_so_once(tmp_path):
    path = write_labels(tmp_path / "labels.json", [])
    trainer = toy_trainer(with_labels(toy_config(steps=2), str(path)), tmp_path / "run")
    with pytest.warns(UserWarning, match="Task toy has no interface label") as caught:
        groups = trainer.rollout()
        trainer.step += 1
        trainer.rollout()
    assert sum("no interface label" in str(w.message) for w in caught) == 1
    episodes = [e for g in groups for e in g]
    assert all(interface_unlabelled(e, trainer.config.reward) for e in episodes)
