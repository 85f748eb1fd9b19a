"""grpo-train sft under DeepSpeed ZeRO-3 on two CPU ranks: the same losses as one torch process.

Each rank takes every second sample of a batch and scales its loss so that the ranks' averaged
gradients are those of the whole batch's token mean; so two ZeRO-3 ranks make the updates one
plain torch process makes, and log the same (all-reduced) loss. The data is a GUI-only toy run
recorded by the runner (no MCP tools shown, so the desktop env's tool catalog renders it).
"""

import re

import pytest

pytest.importorskip("deepspeed")

from ds_launch import launch
from grpo_trainer.cli import main
from sft_setup import GUI_SCRIPT, record_toy_run
from tiny_vlm import saved_tiny_vlm

# A rank: the saved test processor made loadable (AutoProcessor cannot name it here), then `grpo-train sft`.
RANK = """
import sys
import tiny_vlm
from grpo_trainer.cli import main
tiny_vlm.register_processor()
raise SystemExit(main(["sft", "--config", sys.argv[1]]))
"""


def config(tmp_path, base, run, out, backend):
    path = tmp_path / f"{backend}.toml"
    path.write_text(
        f'policy = "{base}"\n[engine]\nbackend = "{backend}"\nzero_stage = 3\nprecision = "fp32"\n'
        f'output_dir = "{out}"\n[sft]\nruns = ["{run}"]\nlr = 3e-2\nepochs = 3\nbatch_size = 4\n'
        "micro_batch_size = 1\n"
    )
    return path


def losses(text, rank=0):
    return [float(x) for x in re.findall(rf"rank {rank} update \d+: loss ([0-9.]+)", text)]


def test_two_zero3_ranks_make_the_updates_of_one_torch_process(tmp_path, capsys):
    base = saved_tiny_vlm(tmp_path / "base")
    run = record_toy_run(tmp_path / "gui", {0: GUI_SCRIPT, 1: GUI_SCRIPT}, gui_only=True)
    assert main(["sft", "--config", str(config(tmp_path, base, run, tmp_path / "torch", "torch"))]) == 0
    alone = losses(capsys.readouterr().out)
    ds = config(tmp_path, base, run, tmp_path / "ds", "deepspeed")
    script = tmp_path / "sft_rank.py"
    script.write_text(RANK)
    done = launch(2, ["--no_local_rank", str(script), str(ds)], timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    print("torch:", alone, "zero3 x2:", losses(done.stdout), losses(done.stdout, rank=1))
    assert len(alone) == 3 and alone[-1] < alone[0]
    assert losses(done.stdout) == pytest.approx(alone, abs=2e-4)
    assert losses(done.stdout, rank=1) == losses(done.stdout)
    assert (tmp_path / "ds" / "hf" / "config.json").is_file()
