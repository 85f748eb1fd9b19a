"""[checkpoint] keep_last: only the N newest complete checkpoints stay, and resume still takes the newest."""

import dataclasses

import pytest
import torch
from grpo_trainer.config import CheckpointSettings, RolloutSettings
from grpo_trainer.errors import CheckpointError
from grpo_trainer.training.checkpoints import checkpoint_step, resolve_checkpoint, rotate_checkpoints
from toy_setup import toy_config, toy_trainer


def _folder(tmp_path, names, latest):
    for name in names:
        if name.endswith(".pt"):
            (tmp_path / name).write_bytes(b"x")
        else:
            (tmp_path / name).mkdir()
            (tmp_path / name / "trainer_rank0.pt").write_bytes(b"x")
    (tmp_path / "latest").write_text(latest)
    return tmp_path


def test_rotation_keeps_the_newest_complete_checkpoints_and_any_newer_partial_one(tmp_path):
    # step_5.pt is newer than latest: a save killed before the pointer moved (the next save overwrites it).
    folder = _folder(tmp_path, [f"step_{i}.pt" for i in range(1, 6)], latest="step_4.pt")
    assert rotate_checkpoints(folder, keep_last=2) == ["step_1.pt", "step_2.pt"]
    assert sorted(p.name for p in folder.iterdir()) == ["latest", "step_3.pt", "step_4.pt", "step_5.pt"]


def test_rotation_removes_deepspeed_folders_and_keeps_everything_at_zero(tmp_path):
    folder = _folder(tmp_path, ["step_2", "step_10", "step_11"], latest="step_11")
    assert rotate_checkpoints(folder, keep_last=0) == []
    assert rotate_checkpoints(folder, keep_last=1) == ["step_2", "step_10"]  # by step, not by name
    assert sorted(p.name for p in folder.iterdir()) == ["latest", "step_11"]


def test_checkpoint_names_and_resolution(tmp_path):
    assert [checkpoint_step(n) for n in ("step_3.pt", "step_3", "step_3.tmp", "latest")] == [3, 3, None, None]
    (tmp_path / "checkpoints").mkdir()
    folder = _folder(tmp_path / "checkpoints", [], latest="step_7")
    with pytest.raises(CheckpointError, match="names step_7, which is missing"):
        resolve_checkpoint(tmp_path)
    (folder / "step_7").mkdir()
    assert resolve_checkpoint(tmp_path) == resolve_checkpoint(folder) == (folder, "step_7")
    assert resolve_checkpoint(folder / "step_7") == (folder, "step_7")
    with pytest.raises(CheckpointError, match="is not a checkpoint"):
        resolve_checkpoint(tmp_path / "elsewhere")
    with pytest.raises(ValueError, match="keep_last must be >= 0"):
        CheckpointSettings(keep_last=-1)


def _small(keep_last: int):
    # Two members, one group, one update a step: the cheapest run that still trains.
    config = toy_config(steps=3)
    return dataclasses.replace(
        config,
        rollout=RolloutSettings(group_size=2, tasks_per_step=1),
        optim=dataclasses.replace(config.optim, updates_per_batch=1),
        checkpoint=CheckpointSettings(keep_last=keep_last),
    )


def _names(folder):
    return sorted(p.name for p in folder.iterdir())


def test_the_trainer_rotates_after_each_save_and_resumes_from_the_newest(tmp_path):
    config = _small(keep_last=2)
    trainer = toy_trainer(config, tmp_path)
    for step in (1, 2, 3):
        trainer.step = step
        for p in trainer.policy.module.parameters():  # distinct weights per checkpoint
            p.data.add_(1.0)
        trainer.save()
    assert _names(tmp_path / "checkpoints") == ["latest", "step_2.pt", "step_3.pt"]
    resumed = toy_trainer(config, tmp_path)
    assert resumed.step == 3
    for got, want in zip(resumed.policy.module.parameters(), trainer.policy.module.parameters(), strict=True):
        assert torch.equal(got, want)


@pytest.mark.slow
def test_keep_last_leaves_the_newest_checkpoints_and_a_resumed_run_goes_on_exactly(tmp_path):
    config = _small(keep_last=1)
    reference = toy_trainer(config, tmp_path / "ref").train()
    assert _names(tmp_path / "ref" / "checkpoints") == ["latest", "step_3.pt"]
    run = tmp_path / "run"
    first = toy_trainer(config, run)
    for _ in range(2):
        first.train_step()
    assert _names(run / "checkpoints") == ["latest", "step_2.pt"]
    resumed = toy_trainer(config, run)
    assert resumed.step == 2
    after = resumed.train()
    assert [m["step"] for m in after] == [2]
    assert any("train/loss" in m for m in reference)  # some step trained, so the losses compare
    for got, want in zip(after, reference[2:], strict=True):
        assert got.get("train/loss") == want.get("train/loss")
        assert got["rollout/reward"] == want["rollout/reward"]
    assert _names(run / "checkpoints") == ["latest", "step_3.pt"]
