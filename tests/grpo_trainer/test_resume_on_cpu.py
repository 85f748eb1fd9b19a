"""A run killed with SIGKILL resumes from its last checkpoint and reproduces the next steps exactly."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from toy_setup import toy_config, toy_trainer

HERE = Path(__file__).parent
SCRIPT = """
import sys
from toy_setup import toy_config, toy_trainer
toy_trainer(toy_config(steps=5), sys.argv[1]).train()
"""


@pytest.mark.slow
def test_sigkill_then_resume_reproduces_the_losses(tmp_path):
    reference = toy_trainer(toy_config(steps=5), tmp_path / "ref").train()
    run = tmp_path / "killed"
    env = {**os.environ, "PYTHONPATH": str(HERE)}
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT, str(run)], env=env)
    checkpoint = run / "checkpoints" / "step_2.pt"
    deadline = time.monotonic() + 300
    while not checkpoint.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)  # polling a file's existence, not guessing a duration
    assert checkpoint.exists(), "the run never wrote its step-2 checkpoint"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    resumed = toy_trainer(toy_config(steps=5), run)
    assert 2 <= resumed.step < 5
    start = resumed.step
    after = resumed.train()
    assert [m["step"] for m in after] == list(range(start, 5))
    for got, want in zip(after, reference[start:], strict=True):
        assert got.get("train/loss") == want.get("train/loss")
        assert got["rollout/reward"] == want["rollout/reward"]
