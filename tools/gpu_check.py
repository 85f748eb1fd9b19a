"""One prepared check on a lent GPU: rollout tokens/s and log-prob gap, GRPO updates, memory.

tools/gpu_check.sh runs it phase by phase, each phase a process of its own (so one phase's
engine never holds memory in the next, and a phase killed by its timeout loses only itself):

``--phases build``
    Saves a Qwen3-VL with seeded random weights (``--shape 2b``: Qwen3-VL-2B's dimensions;
    ``mini``: the same architecture at toy sizes, the CPU rehearsal's) and the tests'
    in-process processor to ``--checkpoint``, so nothing is downloaded
    (tools/bench_trainer.py's builder).
``--phases rollout``
    Samples ``--rows`` prompts (a screenshot and an instruction each; 1920x1080 for ``2b``)
    with each engine of ``--engines`` and reports rollout tokens/s and the gap between the
    log-probs the engine stored and the trainer's recomputation of them.
``--phases train --setup NAME``
    Runs ``--steps`` GRPO steps on the toy env (and the desktop env unless ``--no-desktop``)
    with one training set-up of :data:`SETUPS` (full fine-tuning or LoRA, padded or
    padding-free micro-batches, the torch backend or DeepSpeed ZeRO-3 on one rank), gradient
    checkpointing on: rollout and update seconds, training tokens/s and the peak memory of
    each phase (``torch.cuda.max_memory_allocated``; RSS on the CPU).

Random weights score 0 on every task, so the default accuracy filter would drop every
group and nothing would train: the check's groups all enter the update (``keep_all``, with
advantages of 0 the gradient is the KL term's, but the forward, backward, optimizer step and
weight publication all run). A train row reads ``ok`` only when training tokens were logged,
and a desktop row only when some episode ran without crashing.

Each row is printed (and appended to ``--out`` as a JSON line) the moment it is measured,
so a phase killed by its timeout keeps the rows before it. An engine or env that cannot
start is a row saying why, and the check carries on.

    python tools/gpu_check.py --device cuda --shape 2b --checkpoint /tmp/ckpt --phases build
    python tools/gpu_check.py --device cuda --shape 2b --checkpoint /tmp/ckpt --phases rollout
    python tools/gpu_check.py --device cuda --shape 2b --checkpoint /tmp/ckpt --phases train --setup lora
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import resource
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "hybrid_agent"))  # the tests' processor (nothing downloaded)
sys.path.insert(0, str(ROOT / "tools"))  # bench_trainer's checkpoint builder

TOY_ENV = "grpo_trainer:ToolOrGui-v0"
DESKTOP_ENV = "osworld_mcp_env:OSWorldMCP-v0"
SCREEN = {"2b": (1920, 1080), "mini": (640, 360)}

# Training set-ups: name -> (lora, packing, backend).
SETUPS: dict[str, tuple[bool, str, str]] = {
    "full-padded": (False, "padded", "torch"),
    "full-padding_free": (False, "padding_free", "torch"),
    "lora-padded": (True, "padded", "torch"),
    "lora-padding_free": (True, "padding_free", "torch"),
    "zero3-full-padded": (False, "padded", "deepspeed"),
}

COLUMNS = {
    "rollout": (
        "phase", "engine", "status", "rows", "prompt_tokens", "tokens", "seconds", "tokens_per_s",
        "logprob_gap_mean", "logprob_gap_max", "peak_mb",
    ),
    "train": (
        "phase", "setup", "env", "step", "status", "rollout_s", "rollout_peak_mb", "update_s",
        "update_peak_mb", "train_tokens", "train_tokens_per_s", "weight_sync_s", "groups_kept",
        "crashed",
    ),
}  # fmt: skip


class RowPrinter:
    """Prints each row as a markdown line the moment it is measured (flushed), and appends it to ``out``."""

    def __init__(self, phase: str, out: Path | None) -> None:
        """Prints the phase's table header."""
        self.columns = COLUMNS[phase]
        self.out = out
        print("| " + " | ".join(self.columns) + " |", flush=True)
        print("|" + "---|" * len(self.columns), flush=True)

    def __call__(self, row: dict[str, Any]) -> dict[str, Any]:
        """Prints and records ``row``; returns it."""
        print("| " + " | ".join(str(row.get(k, "")) for k in self.columns) + " |", flush=True)
        if self.out is not None:
            with self.out.open("a") as file:
                file.write(json.dumps(row) + "\n")
        return row


def _keep_all(returns: Sequence[float], success_rate: float, config: Any) -> bool:
    """Every group enters the update (random weights score 0 everywhere: the accuracy filter keeps none)."""
    return True


def _register_keep_all() -> None:
    from grpo_trainer.objectives.advantage import GROUP_FILTERS

    if "keep_all" not in GROUP_FILTERS:
        GROUP_FILTERS.add("keep_all", _keep_all)


def build_checkpoint(shape: str, folder: Path, device: str) -> str:
    """Saves tools/bench_trainer.py's random-weight Qwen3-VL of ``shape`` (and the tests' processor).

    ``device`` (``cpu``/``cuda``) is where the weights are initialised. Returns the ``hf:`` spec.
    """
    from bench_trainer import build_checkpoint as build

    build(shape, folder, device)
    return f"hf:{folder}"


def _register_processor() -> None:
    """``AutoProcessor`` (what ``hf:PATH`` loads with) finds the tests' processor class by name.

    The real ``Qwen3VLProcessor`` needs torchvision's video processor. Registered under its
    name, not under ``Qwen3VLConfig``: transformers 5.17 (the GPU image's) ignores a
    registration for a config class of its own, and then ``AutoProcessor`` returns the bare
    tokenizer; a name key is what it looks the saved ``processor_class`` up by.
    """
    import tiny_qwen
    from transformers import AutoProcessor

    processor = tiny_qwen.ImageOnlyQwen3VLProcessor
    AutoProcessor.register(processor.__name__, processor, exist_ok=True)


def _config(spec: str, engine: str, args: argparse.Namespace, setup: str = "full-padded") -> Any:
    from grpo_trainer.config import (
        EngineSettings,
        GRPOConfig,
        LoraSettings,
        ModelSettings,
        OptimSettings,
        RolloutSettings,
    )
    from grpo_trainer.objectives.advantage import AdvantageConfig
    from grpo_trainer.objectives.rewards import RewardConfig

    lora, packing, backend = SETUPS[setup]
    bf16 = args.device == "cuda"
    return GRPOConfig(
        policy=spec,
        model=ModelSettings(lora=LoraSettings() if lora else None, gradient_checkpointing=True),
        rollout=RolloutSettings(
            group_size=args.group,
            tasks_per_step=1,
            max_new_tokens=args.max_new_tokens,
            max_prompt_tokens=args.max_prompt_tokens,
            engine=engine,
            engine_options={"gpu_memory_utilization": args.gpu_memory_utilization}
            if engine == "vllm"
            else {},
        ),
        reward=RewardConfig(max_steps=2),
        advantage=AdvantageConfig(group_filter="keep_all"),
        optim=OptimSettings(lr=1e-6, total_steps=args.steps, updates_per_batch=1, packing=packing),
        engine=EngineSettings(
            backend=backend, precision="bf16" if bf16 else "fp32", save_every=10**6, zero_stage=3
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
    """``rows`` prompts of one screenshot (boxes, so patches differ) and an instruction each."""
    from hybrid_agent.messages import image_part, text_part
    from PIL import Image, ImageDraw

    width, height = SCREEN[shape]
    prompts = []
    for i in range(rows):
        screen = Image.new("RGB", (width, height), (235, 235, 235))
        draw = ImageDraw.Draw(screen)
        for k in range(24):
            x, y = (97 * (i + 3 * k)) % width, (61 * (2 * i + k)) % height
            draw.rectangle([x, y, x + 80, y + 24], fill=((40 * k) % 256, (90 * i) % 256, 120))
        message = [image_part(screen), text_part(f"Instruction {i}: put {i} in A1, then sum column A")]
        prompts.append(policy.encode([{"role": "user", "content": message}]))
    return prompts


def _failure(exc: BaseException) -> str:
    return f"failed: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]


def rollout_rows(spec: str, policy: Any, args: argparse.Namespace, emit: Any) -> list[dict[str, Any]]:
    """Rollout tokens/s of each engine of ``--engines`` on the same prompts, one after another.

    The recomputation runs in the precision the trainer's forward does (the torch backend's
    bf16 autocast on the GPU). An engine that cannot start, or fails while sampling, is a row
    saying so; the next engine still runs.
    """
    from grpo_trainer.model.engines import make_engine
    from grpo_trainer.training.backend import make_backend

    backend = make_backend(_config(spec, "hf", args), policy.module)

    prompts = _prompts(policy, args.shape, args.rows)
    rows = []
    for name in args.engines:
        row: dict[str, Any] = {"phase": "rollout", "engine": name, "rows": len(prompts)}
        row["prompt_tokens"] = sum(len(p) for p in prompts)
        try:
            engine = make_engine(_config(spec, name, args), policy)
        except Exception as exc:  # reported in the table; the check goes on
            missing = type(exc).__name__ == "VLLMMissing"
            rows.append(emit({**row, "status": "absent: vllm not installed" if missing else _failure(exc)}))
            continue
        try:
            rows.append(emit({**row, **_measure_rollout(engine, policy, backend, prompts, args.device)}))
        except Exception as exc:  # one engine's sampling error leaves the others' rows
            rows.append(emit({**row, "status": _failure(exc)}))
        del engine
    return rows


def _measure_rollout(
    engine: Any, policy: Any, backend: Any, prompts: list[list[int]], device: str
) -> dict[str, Any]:
    _reset_peak(device)
    started = time.perf_counter()
    with torch.no_grad(), engine.generating(backend):
        sampled = engine.sample(prompts, 1.0, torch.Generator().manual_seed(0))
    if device == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - started
    tokens = sum(len(s.ids) for s in sampled)
    with torch.no_grad(), backend.generation():
        keep = [i for i, s in enumerate(sampled) if s.ids]
        scored = policy.logprobs([prompts[i] for i in keep], [sampled[i].ids for i in keep], 1.0)
    gaps = [
        abs(float(scored[r, k]) - lp) for r, i in enumerate(keep) for k, lp in enumerate(sampled[i].logprobs)
    ]
    return {
        "status": "ok" if tokens else "failed: no tokens sampled",
        "tokens": tokens,
        "seconds": round(seconds, 3),
        "tokens_per_s": round(tokens / seconds, 1),
        "logprob_gap_mean": round(sum(gaps) / max(len(gaps), 1), 5),
        "logprob_gap_max": round(max(gaps, default=0.0), 5),
        "peak_mb": round(_peak_mb(device), 1),
    }


def training_rows(
    spec: str,
    setup: str,
    env_id: str,
    env_kwargs: dict[str, Any],
    args: argparse.Namespace,
    emit: Any,
) -> list[dict[str, Any]]:
    """``--steps`` GRPO steps of ``setup`` on ``env_id``; one row per step."""
    import gymnasium as gym
    from grpo_trainer.cli import build_policy
    from grpo_trainer.rollouts.vector import make_group_env
    from grpo_trainer.training.trainer import Trainer

    config = _config(spec, args.train_engine, args, setup)
    task = "toy" if env_id == TOY_ENV else args.desktop_task
    config = dataclasses.replace(config, env_id=env_id, tasks=(task,))
    head = {"phase": "train", "setup": setup, "env": env_id.split(":")[-1]}
    try:
        venv = make_group_env(lambda: gym.make(env_id, max_steps=2, **env_kwargs), config.rollout.group_size)
        run_dir = Path(tempfile.mkdtemp(prefix="gpu-check-run-"))
        trainer = Trainer(config, build_policy(config), venv, run_dir)
    except Exception as exc:  # no desktop, no engine, no deepspeed: a row, not a crash
        return [emit({**head, "status": f"unavailable: {_failure(exc)}"})]
    rows = []
    try:
        for step in range(args.steps):
            rows.append(emit({**head, "step": step, **_measure_step(trainer, config, args.device)}))
    except Exception as exc:  # a row, and the next set-up still runs
        rows.append(emit({**head, "status": _failure(exc)}))
    finally:
        venv.close()
    return rows


def _measure_step(trainer: Any, config: Any, device: str) -> dict[str, Any]:
    _reset_peak(device)
    started = time.perf_counter()
    groups = trainer.rollout()
    rollout_s = time.perf_counter() - started
    rollout_peak = _peak_mb(device)
    _reset_peak(device)
    log = trainer._learn(groups, {"time/rollout_s": rollout_s})
    optim = config.optim
    tokens = log.get("train/tokens", 0.0) * optim.updates_per_batch * optim.minibatches
    update_s = log["time/update_s"]
    episodes = sum(len(g) for g in groups)
    crashed = int(log["rollout/crashed"])
    if crashed == episodes:
        first = next(e.crash for g in groups for e in g if e.crash)
        status = f"unavailable: all {episodes} episodes crashed ({str(first)[:160]})"
    elif not tokens:
        status = "failed: no training tokens logged"
    else:
        status = "ok"
    return {
        "status": status,
        "rollout_s": round(rollout_s, 3),
        "rollout_peak_mb": round(rollout_peak, 1),
        "update_s": round(update_s, 3),
        "update_peak_mb": round(_peak_mb(device), 1),
        "train_tokens": int(tokens),
        "train_tokens_per_s": round(tokens / update_s, 1) if update_s else 0.0,
        "weight_sync_s": round(log.get("time/weight_sync_s", 0.0), 3),
        "groups_kept": int(log["rollout/groups_kept"]),
        "crashed": crashed,
    }


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cuda")
    parser.add_argument("--shape", choices=tuple(SCREEN), default="2b")
    parser.add_argument("--checkpoint", type=Path, required=True, help="built there by --phases build")
    parser.add_argument("--phases", type=lambda s: s.split(","), default=["build", "rollout", "train"])
    parser.add_argument("--engines", type=lambda s: s.split(","), default=["hf", "vllm"])
    parser.add_argument("--setup", choices=tuple(SETUPS), default="full-padded", help="train phase")
    parser.add_argument("--train-engine", default="hf", help="train phase's rollout engine")
    parser.add_argument("--steps", type=int, default=1)
    parser.add_argument("--rows", type=int, default=8, help="prompts sampled per engine (G)")
    parser.add_argument("--group", type=int, default=4, help="train phase's group size")
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--max-prompt-tokens", type=int, default=8192)
    parser.add_argument("--gpu-memory-utilization", type=float, default=0.35)
    parser.add_argument("--desktop-task", default="calc-sum-column")
    parser.add_argument("--no-desktop", action="store_true", help="toy env only")
    parser.add_argument("--out", type=Path, help="rows appended as JSON lines")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Runs the check's phases; prints each row as it is measured (and appends it to ``--out``)."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: no CUDA device visible")
    import grpo_trainer  # noqa: F401  (registers the toy env)
    from grpo_trainer.cli import build_policy

    _register_keep_all()
    _register_processor()
    spec = f"hf:{args.checkpoint}"
    if "build" in args.phases:
        started = time.perf_counter()
        build_checkpoint(args.shape, args.checkpoint, args.device)
        print(f"built {args.shape} checkpoint in {time.perf_counter() - started:.1f} s", flush=True)
    if "rollout" in args.phases:
        emit = RowPrinter("rollout", args.out)
        policy = build_policy(_config(spec, "hf", args))
        rollout_rows(spec, policy, args, emit)
        del policy
    if "train" in args.phases:
        emit = RowPrinter("train", args.out)
        envs: list[tuple[str, dict[str, Any]]] = [(TOY_ENV, {})]
        if not args.no_desktop:
            envs.append((DESKTOP_ENV, {}))
        for env_id, env_kwargs in envs:
            training_rows(spec, args.setup, env_id, env_kwargs, args, emit)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
