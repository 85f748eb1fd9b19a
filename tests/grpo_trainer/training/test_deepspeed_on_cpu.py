"""DeepSpeed on CPU ranks (gloo): ZeRO-3 matches plain torch on one rank; two ranks through the launcher.

Every run is a subprocess (see ds_launch.py). The toy env and the in-code tiny policy
keep a step to seconds; the tiny Qwen3-VL runs bf16 ZeRO-3 on two ranks.
"""

import json
from pathlib import Path

import pytest
import torch
from ds_launch import launch, one_rank
from grpo_trainer.rollouts.toy_env import SIZE
from toy_setup import toy_config, toy_trainer

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

MATCH = """
import json, sys
from dataclasses import replace
from toy_setup import toy_config, toy_trainer
config = toy_config(steps=2)
engine = replace(config.engine, backend="deepspeed", zero_stage=3, precision="fp32", micro_batch_size=16)
for metrics in toy_trainer(replace(config, engine=engine), sys.argv[1]).train():
    print("STEP", json.dumps(metrics), flush=True)
"""


def test_zero3_on_one_rank_takes_the_torch_backends_steps(tmp_path):
    # Same rollouts, same updates: ZeRO-3 (fp32, micro-batches of 16) and plain torch (whole batch).
    torch_steps = toy_trainer(toy_config(steps=2), tmp_path / "torch").train()
    done = one_rank(MATCH, [str(tmp_path / "ds")], timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    ds_steps = [json.loads(line[5:]) for line in done.stdout.splitlines() if line.startswith("STEP ")]
    assert len(ds_steps) == 2
    for got, want in zip(ds_steps, torch_steps, strict=True):
        assert got["rollout/reward"] == want["rollout/reward"]
        for key in ("train/loss", "train/grad_norm", "train/kl_last", "lr"):
            assert got[key] == pytest.approx(want[key], rel=1e-4, abs=1e-9), key


def _toml(tmp_path: Path, precision: str) -> Path:
    path = tmp_path / "run.toml"
    path.write_text(
        f"""
policy = "tiny"
env_id = "grpo_trainer:ToolOrGui-v0"
env_kwargs = {{ max_steps = 6 }}
tasks = ["toy"]
[rollout]
group_size = 8
tasks_per_step = 2
[reward]
max_steps = 6
[optim]
lr = 3e-3
updates_per_batch = 2
total_steps = 2
[engine]
backend = "deepspeed"
zero_stage = 3
precision = "{precision}"
micro_batch_size = 16
output_dir = "{tmp_path / "run"}"
"""
    )
    return path


def test_two_ranks_train_two_steps_through_the_launcher(tmp_path):
    # fp32: the in-code tiny policy's sampler cannot take bf16 weights yet (see the report).
    done = launch(2, ["--module", "grpo_trainer.cli", "--config", str(_toml(tmp_path, "fp32"))], timeout=1200)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    run = tmp_path / "run"
    ranks = [
        [json.loads(line) for line in (run / name).read_text().splitlines()]
        for name in ("metrics.jsonl", "metrics_rank1.jsonl")
    ]
    for logs in ranks:
        assert [m["step"] for m in logs] == [0, 1]
    for step in (0, 1):  # the ranks agree on whether a step trained, and on the schedule
        assert ("train/loss" in ranks[0][step]) == ("train/loss" in ranks[1][step])
        assert ranks[0][step]["lr"] == ranks[1][step]["lr"]
    assert any("train/loss" in m for m in ranks[0])
    assert all(m["train/grad_norm"] > 0 for logs in ranks for m in logs if "train/loss" in m)
    # The ranks rolled out different groups (seeds 0-1 and 2-3 of step 0), not copies.
    assert [m["rollout/reward"] for m in ranks[0]] != [m["rollout/reward"] for m in ranks[1]]
    checkpoint = run / "checkpoints" / "step_2"
    assert (run / "checkpoints" / "latest").read_text() == "step_2"
    shards = []
    for rank in (0, 1):
        assert (checkpoint / f"trainer_rank{rank}.pt").is_file()
        optim = torch.load(checkpoint / f"zero_pp_rank_{rank}_mp_rank_00_optim_states.pt", weights_only=False)
        shards.append(sum(t.numel() for t in optim["optimizer_state_dict"]["fp32_flat_groups"]))
    from grpo_trainer.model.tiny import TinyPolicy
    from grpo_trainer.model.toy_menu import MENU

    total = sum(p.numel() for p in TinyPolicy(MENU).parameters())
    # ZeRO-3: each rank holds about half of the fp32 master weights (partitions are padded).
    assert all(total / 2 <= s < total / 2 + 64 for s in shards), (shards, total)


VLM = """
import dataclasses, json, sys
from pathlib import Path
import gymnasium as gym, numpy as np, torch
import grpo_trainer
from grpo_trainer.objectives.advantage import group_advantages
from grpo_trainer.config import EngineSettings, GRPOConfig, OptimSettings, RolloutSettings
from grpo_trainer.training.trainer import Trainer
from grpo_trainer.objectives.rewards import RewardConfig
from grpo_trainer.rollouts.vector import make_group_env
from tiny_vlm import tiny_vlm_policy

run = Path(sys.argv[1])
env = json.loads(sys.argv[2])  # {"id": ..., "kwargs": {...}, "tasks": [...]}
config = GRPOConfig(
    env_id=env["id"],
    tasks=tuple(env["tasks"]),
    rollout=RolloutSettings(group_size=2, tasks_per_step=1),
    reward=RewardConfig(max_steps=2),
    optim=OptimSettings(lr=1e-2, total_steps=2, updates_per_batch=1),
    engine=EngineSettings(
        backend="deepspeed", zero_stage=3, precision="bf16", micro_batch_size=1, replay_check=True
    ),
)
policy = tiny_vlm_policy(max_new_tokens=8)
venv = make_group_env(lambda: gym.make(config.env_id, **env["kwargs"]), 2)
trainer = Trainer(config, policy, venv, run)
out = {"rank": trainer.backend.rank, "dtype": str(next(policy.module.parameters()).dtype), "steps": []}
for _ in range(2):
    groups = trainer.rollout()
    # A random VLM never succeeds, so the accuracy filter would drop every group: score the
    # rollouts as if member 0 had won (+1 on its steps) and member 1 lost (-1).
    scored = [group_advantages(g, config.reward, config.advantage) for g in groups]
    signed = lambda s: [[1.0 - 2 * m] * e.length for m, e in enumerate(s.episodes)]
    scored = [
        dataclasses.replace(s, kept=True, advantages=signed(s))
        for s in scored
    ]
    batch = trainer._batch(scored)  # replays every VisionPrompt and checks the ids
    micro = trainer._micro_batches(batch)
    rounds = trainer.backend.agree(len(micro), "max")
    winners = [i for i, a in enumerate(batch["advantages"]) if a > 0]
    def score():
        with torch.no_grad():
            lp = policy.logprobs(batch["prompts"], batch["responses"], 1.0).float().sum(dim=1)
        return lp[winners].mean().item() - lp[[i for i in range(len(lp)) if i not in winners]].mean().item()
    before = score()
    metrics = trainer._update(micro, rounds)
    after = score()
    trainer.step += 1
    trainer.save()
    shapes = sorted({np.asarray(image).shape for p in batch["prompts"] for image in p.images})
    out["steps"].append({"groups": [e.group for g in groups for e in g], "samples": len(batch["prompts"]),
                         "image_shapes": shapes,
                         "rounds": rounds, "micro": len(micro), "margin": [before, after], **metrics})
venv.close()
(run / f"result_rank{out['rank']}.json").write_text(json.dumps(out))
"""

TOY_ENV = {
    "id": "grpo_trainer:ToolOrGui-v0",
    "kwargs": {"max_steps": 2},
    "tasks": ["toy"],
    "frame": [SIZE, SIZE, 3],
}
# The real desktop: each rank's group is two sandboxed desktops on the bundled OS task.
DESKTOP_ENV = {
    "id": "osworld_mcp_env:OSWorldMCP-v0",
    "kwargs": {"max_steps": 2, "enable_mcp": False},
    "tasks": ["os-create-file"],
    "frame": [1080, 1920, 3],
}


@pytest.mark.parametrize(
    "env", [TOY_ENV, pytest.param(DESKTOP_ENV, marks=pytest.mark.desktop)], ids=["toy-env", "desktop-env"]
)
def test_tiny_qwen3vl_trains_bf16_zero3_on_two_ranks(tmp_path, env):
    pytest.importorskip("transformers")
    script = tmp_path / "vlm.py"
    script.write_text(VLM)
    run = tmp_path / "run"
    done = launch(2, ["--no_local_rank", str(script), str(run), json.dumps(env)], timeout=1200)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    results = [json.loads((run / f"result_rank{r}.json").read_text()) for r in (0, 1)]
    assert [r["rank"] for r in results] == [0, 1]
    assert all(r["dtype"] == "torch.bfloat16" for r in results)
    for step in (0, 1):
        mine, theirs = results[0]["steps"][step], results[1]["steps"][step]
        assert set(mine["groups"]).isdisjoint(theirs["groups"])  # each rank rolled out its own group
        assert mine["rounds"] == theirs["rounds"] == max(mine["micro"], theirs["micro"])
        for r in (mine, theirs):
            assert r["train/tokens"] > 0 and r["train/grad_norm"] > 0
            assert r["image_shapes"] == [env["frame"]]  # the env's screenshots reached the model
    # Raising the winner's log-probs over the loser's is what the update was for (both ranks' data).
    gains = [s["margin"][1] - s["margin"][0] for r in results for s in r["steps"]]
    assert sum(g > 0 for g in gains) >= 3, gains
    assert (run / "checkpoints" / "latest").read_text() == "step_2"
    assert (run / "checkpoints" / "step_2" / "trainer_rank1.pt").is_file()
