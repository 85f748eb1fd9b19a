"""tools/gpu_check.py and tools/gpu_check.sh on the CPU, so the GPU check cannot rot.

The rehearsal runs the lent machine's script in a Python 3.12 environment of the GPU image's
packages plus the carried wheels: an import the machine lacks fails here. The other tests pin
what once made the check print nothing there: a phase killed by its timeout, an engine whose
sampling raises, a run where no episode could start, a check whose random weights train nothing.
"""

import contextlib
import json
import os
import subprocess
import sys
from argparse import Namespace
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import gpu_check  # noqa: E402
import gpu_wheels  # noqa: E402

COMMON = ["--device", "cpu", "--shape", "mini", "--rows", "2", "--group", "2", "--max-new-tokens", "6"]


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    folder = tmp_path_factory.mktemp("gpu-check") / "ckpt"
    gpu_check.main([*COMMON, "--checkpoint", str(folder), "--phases", "build"])
    return folder


def _args(checkpoint, **overrides):
    args = gpu_check._parser().parse_args([*COMMON, "--checkpoint", str(checkpoint), "--no-desktop"])
    return Namespace(**{**vars(args), **overrides})


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_the_rehearsal_runs_every_phase_in_the_gpu_image_environment(tmp_path):
    try:
        gpu_wheels._python312()
    except SystemExit as exc:
        pytest.skip(f"no Python 3.12 for the rehearsal's environment: {exc}")
    out = tmp_path / "out"
    done = subprocess.run(
        ["bash", str(ROOT / "tools" / "gpu_check.sh"), "--rehearse"],
        env={**os.environ, "OUT": str(out)},
        capture_output=True,
        text=True,
        timeout=1700,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert "transformers 5.17.0" in done.stdout and "torch 2.11.0" in done.stdout  # the image's versions
    rows = [json.loads(line) for line in (out / "gpu_check.jsonl").read_text().splitlines()]
    rollout = {r["engine"]: r for r in rows if r["phase"] == "rollout"}
    assert rollout["hf"]["status"] == "ok" and rollout["hf"]["tokens_per_s"] > 0
    assert rollout["hf"]["logprob_gap_max"] < 1e-4  # the hf engine is the trained model
    assert rollout["vllm"]["status"] == "absent: vllm not installed"
    train = {r["setup"]: r for r in rows if r["phase"] == "train"}
    assert set(train) == {"full-padded", "full-padding_free", "lora-padded", "zero3-full-padded"}
    for row in train.values():
        assert row["status"] == "ok" and row["train_tokens"] > 0 and row["groups_kept"] == 1, row
    # $OUT brings back 8 files of 16 MiB at most: the checkpoint and the run dirs stay in /tmp.
    assert [p.name for p in out.iterdir()] == ["gpu_check.jsonl"]


def test_a_row_is_out_before_the_next_phase_ends(checkpoint):
    """A phase killed by its timeout keeps the rows printed before it."""
    command = [sys.executable, str(ROOT / "tools" / "gpu_check.py"), *COMMON, "--no-desktop"]
    command += ["--checkpoint", str(checkpoint), "--phases", "rollout,train", "--engines", "hf"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("| rollout | hf |"):
                break
        proc.kill()  # as timeout would, mid-way through the train phase
        assert proc.wait() == -9, "the row came only when the check had ended"
    assert "| ok |" in line


def test_a_sampling_error_keeps_the_other_engines_rows(checkpoint, monkeypatch):
    from grpo_trainer.cli import build_policy
    from grpo_trainer.model import engines

    class Broken:
        def generating(self, backend):
            return contextlib.nullcontext()

        def sample(self, prompts, temperature, generator):
            raise RuntimeError("CUDA error: an illegal memory access was encountered")

    real = engines.make_engine
    monkeypatch.setattr(
        engines, "make_engine", lambda c, p: Broken() if c.rollout.engine == "broken" else real(c, p)
    )
    args = _args(checkpoint, engines=["broken", "hf"])
    policy = build_policy(gpu_check._config(f"hf:{checkpoint}", "hf", args))
    rows = gpu_check.rollout_rows(f"hf:{checkpoint}", policy, args, lambda row: row)
    assert [r["engine"] for r in rows] == ["broken", "hf"]
    assert rows[0]["status"] == "failed: RuntimeError: CUDA error: an illegal memory access was encountered"
    assert rows[1]["status"] == "ok" and rows[1]["tokens"] > 0


def test_a_run_whose_episodes_all_crashed_is_not_ok(checkpoint):
    """No desktop could start (here: the toy env crashes each episode at its first step)."""
    rows = gpu_check.training_rows(
        f"hf:{checkpoint}", "full-padded", gpu_check.TOY_ENV, {"crash_at": 0}, _args(checkpoint), lambda r: r
    )
    (row,) = rows
    assert row["status"].startswith("unavailable: all 2 episodes crashed"), row
    assert row["crashed"] == 2


def test_random_weights_still_train_and_the_row_says_how_much(checkpoint):
    (row,) = gpu_check.training_rows(
        f"hf:{checkpoint}", "lora-padded", gpu_check.TOY_ENV, {}, _args(checkpoint), lambda r: r
    )
    # Random weights fail every task: the accuracy filter would keep no group and nothing would train.
    assert row["status"] == "ok" and row["groups_kept"] == 1
    assert row["train_tokens"] > 0 and row["train_tokens_per_s"] > 0 and row["update_s"] > 0


def test_the_mini_build_takes_the_2b_code_path_on_the_device_named(checkpoint):
    config = json.loads((checkpoint / "config.json").read_text())
    assert config["vision_config"]["deepstack_visual_indexes"] == [0, 1]  # bench_trainer.MINI_VISION
    assert config["text_config"]["num_key_value_heads"] == 2
