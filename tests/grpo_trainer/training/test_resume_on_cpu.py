"""A run killed with SIGKILL resumes from its last checkpoint and reproduces the next steps exactly.

Plain torch in-process; DeepSpeed ZeRO-3 on one CPU rank in subprocesses (DeepSpeed's
process group outlives a run, see ds_launch.py).
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from ds_launch import ds_env, one_rank
from toy_setup import toy_config, toy_trainer

TEST_ROOT = Path(__file__).parents[1]  # tests/grpo_trainer: toy_setup for the child process
SCRIPT = """
import sys
from toy_setup import toy_config, toy_trainer
toy_trainer(toy_config(steps=5), sys.argv[1]).train()
"""
# micro_batch_size 16 makes every update accumulate over several ZeRO-3 micro-batches.
DS_SCRIPT = """
import json, sys
from dataclasses import replace
from toy_setup import toy_config, toy_trainer
config = toy_config(steps=4)
engine = replace(config.engine, backend="deepspeed", zero_stage=3, precision="fp32", micro_batch_size=16)
trainer = toy_trainer(replace(config, engine=engine), sys.argv[1])
print("START", trainer.step, flush=True)
for metrics in trainer.train():
    print("STEP", json.dumps(metrics), flush=True)
"""


def _kill_after(proc: subprocess.Popen, ready, what: str) -> None:
    deadline = time.monotonic() + 600
    while not ready() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)  # polling a file's existence, not guessing a duration
    assert ready(), f"the run never wrote {what}"
    proc.send_signal(signal.SIGKILL)
    proc.wait()


@pytest.mark.slow
def test_sigkill_then_resume_reproduces_the_losses(tmp_path):
    reference = toy_trainer(toy_config(steps=5), tmp_path / "ref").train()
    run = tmp_path / "killed"
    env = {**os.environ, "PYTHONPATH": str(TEST_ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT, str(run)], env=env)
    latest = run / "checkpoints" / "latest"  # moves only after step_2.pt is renamed into place
    _kill_after(proc, lambda: latest.exists() and latest.read_text() == "step_2.pt", "its step-2 checkpoint")
    resumed = toy_trainer(toy_config(steps=5), run)
    assert 2 <= resumed.step < 5
    start = resumed.step
    after = resumed.train()
    assert [m["step"] for m in after] == list(range(start, 5))
    for got, want in zip(after, reference[start:], strict=True):
        assert got.get("train/loss") == want.get("train/loss")
        assert got["rollout/reward"] == want["rollout/reward"]


def _steps(stdout: str) -> tuple[int, list[dict]]:
    start = int(next(line.split()[1] for line in stdout.splitlines() if line.startswith("START ")))
    steps = [json.loads(line[5:]) for line in stdout.splitlines() if line.startswith("STEP ")]
    return start, steps


@pytest.mark.slow
@pytest.mark.timeout(1800)  # three DeepSpeed runs of ~1 min each alone on 2 cores
def test_deepspeed_sigkill_then_resume_reproduces_the_losses(tmp_path):
    done = one_rank(DS_SCRIPT, [str(tmp_path / "ref")], timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    _, reference = _steps(done.stdout)
    assert [m["step"] for m in reference] == [0, 1, 2, 3]
    run = tmp_path / "killed"
    proc = subprocess.Popen(
        [sys.executable, "-c", DS_SCRIPT, str(run)], env=ds_env(), stdout=subprocess.DEVNULL
    )
    latest = run / "checkpoints" / "latest"  # moves only once every rank's step_2 files are complete
    _kill_after(proc, lambda: latest.exists() and latest.read_text() == "step_2", "its step-2 checkpoint")
    resumed = one_rank(DS_SCRIPT, [str(run)], timeout=900)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    start, after = _steps(resumed.stdout)
    assert 2 <= start < 4
    assert [m["step"] for m in after] == list(range(start, 4))
    for got, want in zip(after, reference[start:], strict=True):
        assert "train/loss" in want
        assert got["train/loss"] == want["train/loss"]
        assert got["train/grad_norm"] == want["train/grad_norm"]
        assert got["rollout/reward"] == want["rollout/reward"]
