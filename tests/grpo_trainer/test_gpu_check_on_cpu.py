"""tools/gpu_check.py's CPU path (tiny model, hf engine, --device cpu), so the GPU check cannot rot.

On this machine vllm is not installed: the rollout table must say so and carry on with hf.
"""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(1200)
def test_the_cpu_path_reports_each_engine_and_a_grpo_step(tmp_path):
    out = tmp_path / "rows.json"
    command = [
        sys.executable,
        str(ROOT / "tools" / "gpu_check.py"),
        *("--device", "cpu", "--shape", "tiny", "--engines", "hf,vllm", "--steps", "1", "--rows", "2"),
        *("--max-new-tokens", "6", "--no-desktop", "--checkpoint", str(tmp_path / "ckpt"), "--out", str(out)),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=1100)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = json.loads(out.read_text())
    hf, vllm = (next(r for r in rows if r["phase"] == "rollout" and r["engine"] == e) for e in ("hf", "vllm"))
    assert hf["status"] == "ok" and hf["tokens"] > 0 and hf["tokens_per_s"] > 0
    # The hf engine is the trained model: its log-probs are the trainer's recomputation.
    assert hf["logprob_gap_mean"] < 1e-4
    if importlib.util.find_spec("vllm") is None:
        assert vllm["status"] == "vllm missing"
    (train,) = [r for r in rows if r["phase"] == "train"]
    assert train["status"] == "ok" and train["engine"] == "hf" and train["rollout_s"] > 0
    assert "| phase |" in done.stdout  # the table is printed
