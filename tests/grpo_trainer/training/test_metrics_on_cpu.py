"""Every step's metrics reach the JSONL file and TensorBoard's event file with the same numbers."""

import json
import struct

import pytest
from grpo_trainer.training.metrics import MetricsSink, tensorboard_dir
from tensorboardX.proto.event_pb2 import Event
from tensorboardX.record_writer import masked_crc32c
from toy_setup import toy_config, toy_trainer

# The issue's scalars: reward, success, adoption, KL, clip fraction, tokens, seconds per phase.
ISSUE_SCALARS = (
    "rollout/reward",
    "rollout/success",
    "rollout/adoption",
    "train/kl",
    "train/clip_frac",
    "train/tokens",
    "time/rollout_s",
    "time/score_s",
    "time/update_s",
)


def read_scalars(folder):
    """``{(tag, step): value}`` from the TFRecord event files in ``folder`` (checksums checked)."""
    scalars = {}
    for path in sorted(folder.glob("events.out.tfevents.*")):
        data, pos = path.read_bytes(), 0
        while pos < len(data):  # TFRecord: length u64, crc(length), record, crc(record)
            header = data[pos : pos + 8]
            record = data[pos + 12 : pos + 12 + struct.unpack("<Q", header)[0]]
            end = pos + 12 + len(record)
            checksums = struct.unpack("<II", data[pos + 8 : pos + 12] + data[end : end + 4])
            assert checksums == (masked_crc32c(header), masked_crc32c(record))
            pos = end + 4
            event = Event.FromString(record)
            for value in event.summary.value:
                scalars[(value.tag, event.step)] = value.simple_value
    return scalars


def test_the_sink_writes_each_number_once_per_format(tmp_path):
    sink = MetricsSink(tmp_path)
    sink.write({"step": 0, "rollout/reward": -0.5, "train/tokens": 12, "flag": True, "note": "x"})
    sink.write({"step": 1, "rollout/reward": 0.25, "train/tokens": 30, "flag": False, "note": "y"})
    sink.close()
    lines = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [line["rollout/reward"] for line in lines] == [-0.5, 0.25]
    assert read_scalars(tensorboard_dir(tmp_path)) == {
        ("rollout/reward", 0): -0.5,
        ("rollout/reward", 1): 0.25,
        ("train/tokens", 0): 12.0,
        ("train/tokens", 1): 30.0,
    }  # bools and strings stay in the JSONL only
    assert tensorboard_dir(tmp_path, rank=2) == tmp_path / "tensorboard" / "rank2"


def test_a_training_step_logs_the_issues_scalars_to_tensorboard(tmp_path):
    trainer = toy_trainer(toy_config(seed=0, steps=2), tmp_path)
    logs = trainer.train()
    trainer.metrics.close()
    scalars = read_scalars(tensorboard_dir(tmp_path))
    for step, metrics in enumerate(logs):
        assert "train/kl" in metrics  # seed 0 trains at both steps (its groups mix outcomes)
        for tag in ISSUE_SCALARS:
            assert scalars[(tag, step)] == pytest.approx(metrics[tag], rel=1e-6, abs=1e-7), tag
    jsonl = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert jsonl == logs
