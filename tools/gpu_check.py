"""One prepared check of issue 30 on a lent GPU: rollout engines, weight sync, GRPO steps, memory.

It builds a checkpoint with random weights (``--shape 2b``: Qwen3-VL-2B's dimensions;
``--shape tiny``: the tests' tiny Qwen3-VL; tools/bench_trainer.py's builder), both with the
tests' in-process processor, so nothing is downloaded, then:

1. samples the same prompts (a screenshot and an instruction) with each engine of
   ``--engines`` once and reports rollout tokens/s, and the engine's log-prob gap to the
   trainer's recomputation (how far vLLM's numerics are from the trained model's);
2. runs ``--steps`` GRPO steps on the toy env (and ``--desktop-task`` on the real desktop
   env unless ``--no-desktop``) with ``--train-engine`` (vLLM when it imports), and reports the
   rollout and update seconds, weight-sync seconds, trained tokens/s and the peak GPU
   memory of each phase (``torch.cuda.max_memory_allocated``; RSS on the CPU).

An engine or an env that cannot start is a row saying why ("vllm missing", "desktop
unavailable: ..."), and the check carries on with the others. The table is printed and,
with ``--out``, written as JSON. ``--phases`` runs part of it: tools/gpu_check.sh runs each
phase in a process of its own, so one phase's engine never holds memory in the next.

    python tools/gpu_check.py --device cuda --shape 2b --engines vllm,hf --steps 2 --out gpu_check.json
    python tools/gpu_check.py --device cpu --shape tiny --engines hf,vllm --steps 1 --no-desktop
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "hybrid_agent"))  # the tests' processor (nothing downloaded)
sys.path.insert(0, str(ROOT / "tools"))  # bench_trainer's checkpoint builder

DESKTOP_ENV = "osworld_mcp_env:OSWorldMCP-v0"


def build_checkpoint(shape: str, folder: Path, device: str) -> str:
    """Saves tools/bench_trainer.py's random-weight Qwen3-VL of ``shape`` (and the tests' processor).

    Returns the ``hf:`` spec. The test processor class is registered for ``AutoProcessor``,
    which ``hf:PATH`` loads with (the real ``Qwen3VLProcessor`` needs torchvision).
    """
    import tiny_qwen
    from bench_trainer import build_checkpoint as build
    from transformers import AutoProcessor, Qwen3VLConfig

    AutoProcessor.register(Qwen3VLConfig, tiny_qwen.ImageOnlyQwen3VLProcessor, exist_ok=True)
    build(shape, folder, device)
    return f"hf:{folder}"


def _config(spec: str, engine: str, args: argparse.Namespace) -> Any:
    from grpo_trainer.config import EngineSettings, GRPOConfig, OptimSettings, RolloutSettings
    from grpo_trainer.rewards import RewardConfig

    return GRPOConfig(
        policy=spec,
        rollout=RolloutSettings(
            group_size=2,
            tasks_per_step=2,
            max_new_tokens=args.max_new_tokens,
            max_prompt_tokens=args.max_prompt_tokens,
            engine=engine,
            engine_options={"gpu_memory_utilization": args.gpu_memory_utilization}
            if engine == "vllm"
            else {},
        ),
        reward=RewardConfig(max_steps=2),
        optim=OptimSettings(lr=1e-6, total_steps=args.steps, updates_per_batch=1),
        engine=EngineSettings(
            backend="torch", precision="bf16" if args.device == "cuda" else "fp32", save_every=10**6
        ),
    )


def _peak_mb(device: str) -> float:
    if device == "cuda":
        return torch.cuda.max_memory_allocated() / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _reset_peak(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()


def _prompts(policy: Any, shape: str, rows: int) -> list[list[int]]:
    from bench_trainer import SHAPES
    from hybrid_agent.messages import image_part, text_part
    from PIL import Image

    screen = Image.new("RGB", SHAPES[shape].screen, (255, 255, 255))
    return [
        policy.encode(
            [{"role": "user", "content": [image_part(screen), text_part(f"Instruction {i}: put 5 in A1")]}]
        )
        for i in range(rows)
    ]


def rollout_rows(spec: str, policy: Any, args: argparse.Namespace) -> list[dict[str, Any]]:
    """Rollout tokens/s of each engine of ``--engines`` on the same prompts, one after another."""
    from grpo_trainer.engines import make_engine

    prompts = _prompts(policy, args.shape, args.rows)
    rows = []
    for name in args.engines:
        row: dict[str, Any] = {"phase": "rollout", "engine": name}
        try:
            engine = make_engine(_config(spec, name, args), policy)
        except Exception as exc:  # reported in the table; the check goes on
            missing = type(exc).__name__ == "VLLMMissing"
            rows.append(
                {**row, "status": "vllm missing" if missing else f"failed: {type(exc).__name__}: {exc}"}
            )
            continue
        _reset_peak(args.device)
        started = time.perf_counter()
        with torch.no_grad():
            sampled = engine.sample(prompts, 1.0, torch.Generator().manual_seed(0))
        seconds = time.perf_counter() - started
        tokens = sum(len(s.ids) for s in sampled)
        with torch.no_grad():
            keep = [i for i, s in enumerate(sampled) if s.ids]
            scored = policy.logprobs([prompts[i] for i in keep], [sampled[i].ids for i in keep], 1.0)
        gaps = [
            abs(float(scored[r, k]) - lp)
            for r, i in enumerate(keep)
            for k, lp in enumerate(sampled[i].logprobs)
        ]
        rows.append(
            {
                **row,
                "status": "ok",
                "tokens": tokens,
                "seconds": round(seconds, 3),
                "tokens_per_s": round(tokens / seconds, 1),
                "logprob_gap_mean": round(sum(gaps) / max(len(gaps), 1), 5),
                "peak_mb": round(_peak_mb(args.device), 1),
            }
        )
    return rows


def training_rows(
    spec: str, engine: str, env_id: str, task: str, args: argparse.Namespace
) -> list[dict[str, Any]]:
    """``--steps`` GRPO steps on ``env_id``; one row per step and phase."""
    import gymnasium as gym
    from grpo_trainer.cli import build_policy
    from grpo_trainer.engine import Trainer
    from grpo_trainer.vector import make_group_env

    config = dataclasses.replace(_config(spec, engine, args), env_id=env_id, tasks=(task,))
    try:
        venv = make_group_env(lambda: gym.make(env_id, max_steps=2), config.rollout.group_size)
        trainer = Trainer(config, build_policy(config), venv, Path(tempfile.mkdtemp(prefix="gpu-check-run-")))
    except Exception as exc:  # no desktop, no engine: a row, not a crash
        return [
            {
                "phase": "train",
                "env": env_id,
                "engine": engine,
                "status": f"unavailable: {type(exc).__name__}: {exc}",
            }
        ]
    rows = []
    for step in range(args.steps):
        _reset_peak(args.device)
        started = time.perf_counter()
        groups = trainer.rollout()
        rollout_s = time.perf_counter() - started
        rollout_peak = _peak_mb(args.device)
        _reset_peak(args.device)
        log = trainer._learn(groups, {"time/rollout_s": rollout_s})
        updates = config.optim.updates_per_step if "train/tokens" in log else 0
        update_s = log["time/update_s"]
        trained = log.get("train/tokens", 0.0) * updates
        rows.append(
            {
                "phase": "train",
                "env": env_id,
                "engine": engine,
                "step": step,
                "status": "ok",
                "rollout_s": round(rollout_s, 3),
                "rollout_peak_mb": round(rollout_peak, 1),
                "update_s": round(update_s, 3),
                "update_peak_mb": round(_peak_mb(args.device), 1),
                "weight_sync_s": round(log.get("time/weight_sync_s", 0.0), 3),
                "train_tokens_per_s": round(trained / update_s, 1) if update_s else 0.0,
                "logprob_gap_max": round(log.get("offpolicy/logprob_diff_max", 0.0), 5),
            }
        )
    venv.close()
    return rows


def print_table(rows: list[dict[str, Any]]) -> None:
    """One markdown table over every key any row has."""
    keys = list(dict.fromkeys(k for row in rows for k in row))
    print("| " + " | ".join(keys) + " |")
    print("|" + "---|" * len(keys))
    for row in rows:
        print("| " + " | ".join(str(row.get(k, "")) for k in keys) + " |")


def _train_engine(name: str) -> str:
    """``auto``: vllm when it imports, else hf (the row names the one used)."""
    if name != "auto":
        return name
    try:
        import vllm  # noqa: F401
    except ImportError:
        return "hf"
    return "vllm"


def main(argv: list[str] | None = None) -> int:
    """Runs the check's phases; prints the table (and writes ``--out``)."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cuda")
    parser.add_argument("--shape", choices=("2b", "tiny"), default="2b")
    parser.add_argument("--checkpoint", type=Path, help="where the checkpoint is (built there when absent)")
    parser.add_argument("--phases", type=lambda s: s.split(","), default=["rollout", "train"])
    parser.add_argument(
        "--engines", type=lambda s: s.split(","), default=["vllm", "hf"], help="rollout phase"
    )
    parser.add_argument("--train-engine", default="auto", help="train phase: vllm, hf or auto")
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--rows", type=int, default=16, help="prompts sampled per engine")
    parser.add_argument("--max-new-tokens", type=int, default=256)
    parser.add_argument("--max-prompt-tokens", type=int, default=8192)
    parser.add_argument("--gpu-memory-utilization", type=float, default=0.35)
    parser.add_argument("--desktop-task", default="calc-sum-column")
    parser.add_argument("--no-desktop", action="store_true", help="toy env only")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: no CUDA device visible")
    import grpo_trainer  # noqa: F401  (registers the toy env)
    from grpo_trainer.cli import build_policy

    folder = args.checkpoint or Path(tempfile.mkdtemp(prefix="gpu-check-ckpt-"))
    if (folder / "config.json").exists():
        spec = f"hf:{folder}"
    else:
        spec = build_checkpoint(
            args.shape, folder, torch.bfloat16 if args.device == "cuda" else torch.float32
        )
    rows: list[dict[str, Any]] = []
    if "rollout" in args.phases:
        policy = build_policy(_config(spec, "hf", args))
        rows += rollout_rows(spec, policy, args)
        del policy
    if "train" in args.phases:
        engine = _train_engine(args.train_engine)
        envs = [("grpo_trainer:ToolOrGui-v0", "toy")]
        if not args.no_desktop:
            envs.append((DESKTOP_ENV, args.desktop_task))
        for env_id, task in envs:
            rows += training_rows(spec, engine, env_id, task, args)
    print_table(rows)
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
