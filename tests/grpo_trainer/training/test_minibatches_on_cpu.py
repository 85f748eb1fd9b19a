"""``[optim] minibatches``: the batch split into mini-batches, one optimizer update each, per pass."""

import dataclasses

import pytest
from grpo_trainer.errors import ConfigError
from grpo_trainer.training.optim import lr_schedule, minibatch_bounds
from toy_setup import toy_config, toy_trainer


def test_bounds_cover_every_sample_once_in_order():
    assert minibatch_bounds(10, 3) == [(0, 4), (4, 7), (7, 10)]
    assert minibatch_bounds(4, 1) == [(0, 4)]
    assert minibatch_bounds(2, 3) == [(0, 1), (1, 2), (2, 2)]  # fewer samples than parts: one empty


def _trained_sizes(config, tmp_path):
    """Runs one step; returns the samples each optimizer update saw, and the trainer."""
    trainer = toy_trainer(config, tmp_path)
    sizes = []
    update = trainer._update

    def recording(micro, *args):
        sizes.append(sum(len(m["prompts"]) for m in micro))
        return update(micro, *args)

    trainer._update = recording
    logs = trainer.train()
    trainer.venv.close()
    return sizes, trainer, logs[0]


@pytest.mark.timeout(600)
def test_each_pass_makes_one_update_per_mini_batch_and_sees_every_sample_once(tmp_path):
    base = toy_config(seed=0, steps=1)  # updates_per_batch = 2; step 0's groups mix outcomes
    config = dataclasses.replace(base, optim=dataclasses.replace(base.optim, minibatches=2))
    sizes, trainer, log = _trained_sizes(config, tmp_path)
    samples = int(log["rollout/samples"])
    first, second = (samples + 1) // 2, samples // 2
    assert sizes == [first, second, first, second]  # 2 passes x 2 mini-batches
    assert trainer.updates == config.optim.updates_per_step == 4
    # The cosine schedule spans every optimizer update of the run: halfway after 2 of 4.
    assert lr_schedule(config)(2) == pytest.approx(0.5)


@pytest.mark.timeout(600)
def test_the_default_reading_is_full_passes_over_the_whole_batch(tmp_path):
    sizes, trainer, log = _trained_sizes(toy_config(seed=0, steps=1), tmp_path)
    assert sizes == [int(log["rollout/samples"])] * 2 and trainer.updates == 2


def test_minibatches_must_be_positive():
    with pytest.raises(ConfigError, match="minibatches"):
        dataclasses.replace(toy_config().optim, minibatches=0)
