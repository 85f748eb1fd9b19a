"""GRPO on a Qwen3-VL: seconds per training sample and peak memory, ours against TRL's ``GRPOTrainer``.

One run builds a Qwen3-VL with seeded random weights and the in-process tokenizer and
processor (tests/hybrid_agent/tiny_qwen.py), saves it once, and trains it on the same
prompts twice, each side in a process of its own so that peak RSS (and CUDA peak) is
that side's alone:

* TRL: ``trl.GRPOTrainer`` in the benchmark's own virtual environment
  (tools/bench_trainer_trl.py; TRL is never installed in the workspace). It generates,
  scores and updates; its batches are written to a file.
* ours: ``grpo_trainer``'s :class:`~grpo_trainer.training.trainer.Trainer` and backend on the
  trainable ``hf:`` policy. It samples the same prompts (generation timed), encodes them
  again as the replay check does, then runs the Trainer's own update loop
  (``Trainer._micro_batches`` and ``Trainer._update``: forward, loss, backward, clip, AdamW,
  LR step) on exactly TRL's samples: the same prompt ids (checked), completion ids,
  rollout-time log-probabilities and advantages.

What is held equal: model config and weights (one checkpoint, loaded by both); prompts
(a system prompt, an instruction, one screenshot each; P prompts x G completions); the
completions (TRL samples exactly ``--completion-tokens`` tokens per row, EOS held back
until then, vision placeholders banned as our sampler bans them; ours updates on those
very ids, and its own sampling uses the same ``max_new_tokens``); the number of updates
(``--updates`` per generation batch, TRL's ``num_iterations``), each over the whole batch
in one forward; the loss shape (clip 0.2, token mean over the batch: TRL's ``dapo``),
AdamW from torch at lr 5e-6 with a cosine schedule and grad clip 1.0, no gradient
checkpointing (TRL's default is on); precision (fp32, or bf16 autocast over fp32 weights
on both: ``--precision``); CPU threads (``--threads``, both processes); the device.

What differs, by design: TRL's KL anchor is a reference model (a second copy of the
weights and one more forward per batch when beta > 0) and it recomputes the old
log-probabilities in a no-grad forward when a batch is updated several times; ours
anchors the KL on the rollout-time log-probabilities its sampler returns. The table
shows TRL at the study's beta 0.02 (the ratio baseline) and at beta 0 (no reference
model, TRL's cheapest). Phases per round: ``gen`` (render, process images, sample),
``update`` (the ``--updates`` optimizer updates), ``total`` (everything between two
updates: gen, scoring and old/ref log-probabilities, prompt re-encoding, update).
``CPU`` columns are the process's CPU time (all threads) in the same phases: on a busy
shared machine they move less than wall-clock time, which waits for the other jobs.
Round 1 warms up: the table shows medians over the other rounds. The load average
is printed with the table: on a shared machine every number depends on it.

Set-up of TRL's environment (about 1 GB; torch from the local CPU wheel, else uv takes
a multi-GB CUDA build)::

    uv venv --python /usr/bin/python3.11 /tmp/bench-trl-venv
    uv pip install --python /tmp/bench-trl-venv/bin/python --find-links /opt/wheels \\
        torch==2.13.0 transformers==5.24.0 trl==1.16.0 pillow

(``--setup-trl-venv`` runs exactly this.) Then::

    uv run --frozen python tools/bench_trainer.py [--config tiny|2b] [--prompts 4] [--group 4]
        [--completion-tokens 32] [--updates 4] [--rounds 3] [--threads 2] [--precision fp32|bf16]
        [--ours-backend torch|deepspeed] [--trl-python /tmp/bench-trl-venv/bin/python]

On a GPU (found automatically) ``--config 2b`` is a Qwen3-VL-2B-shaped model of random
weights (151,936-token vocabulary, 28 layers, 24-layer ViT, real image settings, 1280x720
screenshots) and the table adds CUDA peak memory and tokens/s. Where one interpreter holds
both sides' packages (the GPU machine's python3 with carried wheels: trl, datasets, dill,
multiprocess, transformers 5.24, gymnasium, farama-notifications, rank-bm25, openpyxl,
et-xmlfile, python-docx, defusedxml, tensorboardX), pass ``--trl-python python3`` and put
the workspace on the path: ``PYTHONPATH=$SITE:packages/grpo_trainer/src:packages/hybrid_agent/src:
packages/osworld_mcp_env/src python3 tools/bench_trainer.py --config 2b --trl-python python3``.
The workers are started with ``--worker ours`` by this script, not by hand.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "hybrid_agent"))  # the tiny processor and model of the tests

TRL_VENV = Path("/tmp/bench-trl-venv")
TRL_PACKAGES = ["torch==2.13.0", "transformers==5.24.0", "trl==1.16.0", "pillow"]
WORDS = [
    "click",
    "cell",
    "column",
    "row",
    "sheet",
    "menu",
    "dialog",
    "toolbar",
    "chart",
    "slide",
    "file",
    "save",
]


@dataclass(frozen=True)
class Shape:
    """Per-config defaults: model, image processor, screenshot size, prompt words, batch shape."""

    screen: tuple[int, int]
    system_words: int
    prompts: int
    group: int
    completion_tokens: int


SHAPES = {
    "tiny": Shape(screen=(256, 160), system_words=60, prompts=4, group=4, completion_tokens=32),
    "2b": Shape(screen=(1280, 720), system_words=300, prompts=2, group=8, completion_tokens=128),
    # The 2b build at toy sizes (tools/gpu_check.sh --rehearse): the same code path on a CPU.
    "mini": Shape(screen=(640, 360), system_words=60, prompts=2, group=4, completion_tokens=16),
}

# Qwen3-VL-2B's published shape (text 2048 x 28 layers, GQA 16/8, ViT 1024 x 24 with deepstack).
QWEN3_VL_2B_TEXT = {
    "vocab_size": 151_936,
    "hidden_size": 2048,
    "intermediate_size": 6144,
    "num_hidden_layers": 28,
    "num_attention_heads": 16,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "max_position_embeddings": 262_144,
    "rope_parameters": {
        "rope_type": "default",
        "rope_theta": 5_000_000.0,
        "mrope_section": [24, 20, 20],
        "mrope_interleaved": True,
    },
    "tie_word_embeddings": True,
}
QWEN3_VL_2B_VISION = {
    "depth": 24,
    "hidden_size": 1024,
    "intermediate_size": 4096,
    "num_heads": 16,
    "out_hidden_size": 2048,
    "patch_size": 16,
    "spatial_merge_size": 2,
    "temporal_patch_size": 2,
    "num_position_embeddings": 2304,
    "deepstack_visual_indexes": [5, 11, 17],
}
# The same architecture (GQA, interleaved M-RoPE, deepstack, tied embeddings) at toy sizes; the
# vocabulary is the tokenizer's, so the logits stay small on a CPU.
MINI_TEXT = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "max_position_embeddings": 32_768,
    "rope_parameters": {
        "rope_type": "default",
        "rope_theta": 5_000_000.0,
        "mrope_section": [4, 2, 2],
        "mrope_interleaved": True,
    },
    "tie_word_embeddings": True,
}
MINI_VISION = {
    "depth": 2,
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_heads": 2,
    "out_hidden_size": 64,
    "patch_size": 16,
    "spatial_merge_size": 2,
    "temporal_patch_size": 2,
    "num_position_embeddings": 2304,
    "deepstack_visual_indexes": [0, 1],
}
MODEL_DIMS = {"2b": (QWEN3_VL_2B_TEXT, QWEN3_VL_2B_VISION), "mini": (MINI_TEXT, MINI_VISION)}


# --- set-up (orchestrator) -------------------------------------------------------------------
def setup_trl_venv(venv: Path) -> None:
    """Creates TRL's own environment with uv (torch from the local wheel folder)."""
    subprocess.run(["uv", "venv", "--python", "/usr/bin/python3.11", str(venv)], check=True)
    subprocess.run(
        [
            "uv",
            "pip",
            "install",
            "--python",
            str(venv / "bin" / "python"),
            "--find-links",
            "/opt/wheels",
            *TRL_PACKAGES,
        ],
        check=True,
    )


def build_checkpoint(config: str, folder: Path, device: str) -> dict[str, Any]:
    """Builds and saves the model (seeded random weights) and processor; returns sizes and banned ids.

    ``device`` (``"cpu"``, ``"cuda"``) is where the weights are initialised; ``2b`` and
    ``mini`` are saved in bf16 from there.
    """
    import tiny_qwen
    import torch
    from transformers import Qwen3VLConfig, Qwen3VLForConditionalGeneration

    if config == "tiny":
        processor = tiny_qwen.processor(tiny_qwen.small_image_processor())
        model = tiny_qwen.tiny_model(processor)
    else:
        processor = tiny_qwen.processor(tiny_qwen.qwen3_vl_image_processor())
        tok = processor.tokenizer
        text, vision = MODEL_DIMS[config]
        model_config = Qwen3VLConfig(
            text_config={
                "vocab_size": len(tok),
                **text,
                "pad_token_id": tok.pad_token_id,
                "eos_token_id": tok.eos_token_id,
            },
            vision_config=vision,
            image_token_id=processor.image_token_id,
            video_token_id=processor.video_token_id,
            vision_start_token_id=processor.vision_start_token_id,
            vision_end_token_id=processor.vision_end_token_id,
            tie_word_embeddings=True,
        )
        torch.manual_seed(0)
        with torch.device(device):  # random init of 2B parameters is much faster on the GPU
            model = Qwen3VLForConditionalGeneration(model_config)
        # Half the disk; both sides load these same values in fp32. (mypy reads transformers' `to` unbound.)
        model = model.to(dtype=torch.bfloat16)  # type: ignore[call-arg]
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    names = ("image_token_id", "video_token_id", "vision_start_token_id", "vision_end_token_id")
    return {
        "parameters": sum(p.numel() for p in model.parameters()),
        "banned_ids": sorted({getattr(model.config, n) for n in names}),
    }


def write_prompts(shape: Shape, folder: Path, count: int, seed: int) -> list[dict[str, str]]:
    """``count`` prompts: a system prompt, an instruction and a screenshot-sized image each."""
    from PIL import Image, ImageDraw

    rng = random.Random(seed)
    rows = []
    for i in range(count):
        image = Image.new("RGB", shape.screen, (235, 235, 235))
        draw = ImageDraw.Draw(image)
        for _ in range(40):  # boxes so the patches differ
            x, y = rng.randrange(shape.screen[0]), rng.randrange(shape.screen[1])
            fill = tuple(rng.randrange(256) for _ in range(3))
            draw.rectangle([x, y, x + rng.randint(8, 120), y + rng.randint(8, 40)], fill=fill)
        path = folder / f"screen_{i}.png"
        image.save(path)
        system = "You are a computer-use agent. " + " ".join(
            rng.choice(WORDS) for _ in range(shape.system_words)
        )
        user = f"Instruction {i}: " + " ".join(rng.choice(WORDS) for _ in range(20))
        rows.append({"system": system, "user": user, "image": str(path)})
    return rows


# --- ours (worker) ---------------------------------------------------------------------------
def _sync(device: str) -> None:
    import torch

    if device == "cuda":
        torch.cuda.synchronize()


def run_ours(spec: dict[str, Any], dump: Path) -> dict[str, Any]:
    """Our Trainer's sampling and update loop on TRL's batches; phase times per round."""
    import tiny_qwen
    import torch
    from grpo_trainer.config import EngineSettings, GRPOConfig, OptimSettings, RolloutSettings
    from grpo_trainer.model.hf_policy import HFTrainablePolicy
    from grpo_trainer.training.trainer import Trainer
    from hybrid_agent.messages import image_part, text_part
    from PIL import Image
    from transformers import Qwen3VLForConditionalGeneration

    torch.set_num_threads(spec["threads"])
    device, backend = spec["device"], spec["ours_backend"]
    # The torch backend autocasts fp32 weights (as TRL does); DeepSpeed bf16 keeps bf16 weights.
    dtype = torch.bfloat16 if backend == "deepspeed" and spec["precision"] == "bf16" else torch.float32
    processor = tiny_qwen.ImageOnlyQwen3VLProcessor.from_pretrained(spec["model_dir"])
    model = Qwen3VLForConditionalGeneration.from_pretrained(spec["model_dir"], dtype=dtype)
    policy = HFTrainablePolicy(model.to(device).train(), processor, spec["completion_tokens"])
    config = GRPOConfig(
        policy=f"hf:{spec['model_dir']}",
        rollout=RolloutSettings(group_size=spec["group_size"], tasks_per_step=spec["prompts_per_batch"]),
        optim=OptimSettings(lr=5e-6, updates_per_batch=spec["updates"], total_steps=spec["rounds"]),
        engine=EngineSettings(
            backend=backend,
            precision=spec["precision"],
            seed=spec["seed"],
            save_every=10**9,
            micro_batch_size=0,
        ),
    )
    # The Trainer's venv is used by rollouts only; this benchmark feeds the update loop directly.
    trainer = Trainer(config, policy, venv=None, run_dir=Path(spec["work_dir"]) / "ours")  # type: ignore[arg-type]
    batches = torch.load(dump, weights_only=False)
    rows = spec["prompts"]
    messages = [
        [
            {"role": "system", "content": [text_part(r["system"])]},
            {
                "role": "user",
                "content": [image_part(Image.open(r["image"]).convert("RGB")), text_part(r["user"])],
            },
        ]
        for r in rows
        for _ in range(spec["group_size"])  # TRL's sampler repeats each prompt G times in a row
    ]
    rounds = []
    for trl_batch in batches:  # TRL's dataset is these prompts: every round holds all of them
        _sync(device)
        t0, c0 = time.perf_counter(), time.process_time()
        prompts = [policy.encode(m) for m in messages]  # rollout-time encode
        with trainer.backend.generation():  # the torch backend autocasts there as in its forward
            sampled = policy.sample(prompts, 1.0, trainer.generator)
        _sync(device)
        t1 = time.perf_counter()
        replayed = [policy.encode(m) for m in messages]  # the Trainer's replay check encodes again
        if [list(p) for p in replayed] != trl_batch["prompts"]:
            raise SystemExit(
                "bench_trainer: our prompt ids differ from TRL's; the comparison would not be fair."
            )
        completions = trl_batch["completions"]
        old = trl_batch["old_logprobs"] or [[0.0] * len(c) for c in completions]
        batch = {
            "prompts": replayed,
            "responses": completions,
            "old": old,
            "advantages": trl_batch["advantages"],
        }
        micro = trainer._micro_batches(batch)
        _sync(device)
        t2, c2 = time.perf_counter(), time.process_time()
        for _ in range(spec["updates"]):
            trainer._update(micro, len(micro))
        _sync(device)
        t3, c3 = time.perf_counter(), time.process_time()
        rounds.append(
            {
                "generate_s": t1 - t0,
                "score_s": t2 - t1,
                "update_s": t3 - t2,
                "total_s": t3 - t0,
                "update_cpu_s": c3 - c2,
                "total_cpu_s": c3 - c0,
                "prompt_tokens": sum(len(p) for p in replayed),
                "completion_tokens": sum(len(c) for c in completions),
                "sampled_tokens": sum(len(s.ids) for s in sampled),
            }
        )
    cuda = device == "cuda"
    return {
        "samples": len(messages),
        "rounds": rounds,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "cuda_peak_mib": torch.cuda.max_memory_allocated() / 2**20 if cuda else None,
        "device": torch.cuda.get_device_name() if cuda else "cpu",
    }


# --- orchestration ---------------------------------------------------------------------------
def _env(threads: int) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "OMP_NUM_THREADS": str(threads),
            "MKL_NUM_THREADS": str(threads),
            "TOKENIZERS_PARALLELISM": "false",
            "HF_HUB_OFFLINE": "1",
            "PYTHONUNBUFFERED": "1",
        }
    )
    return env


def _run_worker(cmd: list[str], threads: int, log: Path) -> None:
    with log.open("w") as out:
        done = subprocess.run(cmd, env=_env(threads), stdout=out, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        tail = log.read_text()[-3000:]
        raise SystemExit(
            f"bench_trainer: {' '.join(cmd[:3])} failed (rc {done.returncode}); log {log}:\n{tail}"
        )


def _median(rounds: list[dict[str, Any]], key: str) -> float:
    """The median over the measured rounds (all but the warm-up round, when there are several)."""
    measured = rounds[1:] if len(rounds) > 1 else rounds
    return statistics.median(r[key] for r in measured)


def _row(name: str, result: dict[str, Any], updates: int) -> dict[str, Any]:
    n, rounds = result["samples"], result["rounds"]
    update_s = _median(rounds, "update_s")
    tokens = _median(rounds, "prompt_tokens") + _median(rounds, "completion_tokens")
    return {
        "side": name,
        "samples": n,
        "gen": _median(rounds, "generate_s") / n,
        "update": update_s / n,
        "total": _median(rounds, "total_s") / n,
        "update_cpu": _median(rounds, "update_cpu_s") / n,
        "total_cpu": _median(rounds, "total_cpu_s") / n,
        "rss": result["peak_rss_mib"],
        "cuda": result["cuda_peak_mib"],
        "train_tok_s": tokens * updates / update_s,
        "gen_tok_s": _median(
            rounds, "completion_tokens" if "sampled_tokens" not in rounds[0] else "sampled_tokens"
        )
        / _median(rounds, "generate_s"),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", choices=sorted(SHAPES), default="tiny")
    parser.add_argument("--prompts", type=int, help="prompts per batch (default: per config)")
    parser.add_argument("--group", type=int, help="completions per prompt, G (default: per config)")
    parser.add_argument("--completion-tokens", type=int, help="tokens per completion (default: per config)")
    parser.add_argument(
        "--updates", type=int, default=4, help="policy updates per batch (TRL num_iterations)"
    )
    parser.add_argument("--rounds", type=int, default=4, help="generation batches; the first warms up")
    parser.add_argument(
        "--threads", type=int, default=os.cpu_count() or 1, help="torch CPU threads, both sides"
    )
    parser.add_argument("--precision", choices=("fp32", "bf16"), help="default: bf16 on a GPU, fp32 on CPU")
    parser.add_argument("--ours-backend", choices=("torch", "deepspeed"), default="torch")
    parser.add_argument("--trl-python", default=str(TRL_VENV / "bin" / "python"))
    parser.add_argument(
        "--trl-betas", default="0.02,0", help="one TRL run per KL weight; the first is the baseline"
    )
    parser.add_argument("--setup-trl-venv", action="store_true", help=f"create {TRL_VENV} first")
    parser.add_argument("--work-dir", default="/tmp/bench-trainer")
    parser.add_argument("--seed", type=int, default=10086)
    parser.add_argument("--worker", choices=("ours",), help=argparse.SUPPRESS)
    parser.add_argument("--spec", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--dump", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.worker == "ours":
        result = run_ours(json.loads(Path(args.spec).read_text()), Path(args.dump))
        Path(args.out).write_text(json.dumps(result))
        return 0

    import torch

    started, load_before = time.perf_counter(), os.getloadavg()[0]
    device = "cuda" if torch.cuda.is_available() else "cpu"
    shape = SHAPES[args.config]
    precision = args.precision or ("bf16" if device == "cuda" else "fp32")
    trl_python = Path(args.trl_python)
    if args.setup_trl_venv:
        setup_trl_venv(TRL_VENV)
    if not trl_python.exists():
        print(
            f"bench_trainer: no {trl_python}; run with --setup-trl-venv (see the docstring).", file=sys.stderr
        )
        return 2
    work = Path(args.work_dir) / args.config
    model_dir = work / "model"
    model_dir.mkdir(parents=True, exist_ok=True)
    built = build_checkpoint(args.config, model_dir, device)
    prompts_per_batch = args.prompts or shape.prompts
    spec = {
        "model_dir": str(model_dir),
        "work_dir": str(work),
        "prompts": write_prompts(shape, work, prompts_per_batch, args.seed),
        "prompts_per_batch": prompts_per_batch,
        "group_size": args.group or shape.group,
        "completion_tokens": args.completion_tokens or shape.completion_tokens,
        "updates": args.updates,
        "rounds": args.rounds,
        "threads": args.threads,
        "precision": precision,
        "seed": args.seed,
        "banned_ids": built["banned_ids"],
        "device": device,
        "ours_backend": args.ours_backend,
    }
    results: list[tuple[str, dict[str, Any]]] = []
    betas = [float(b) for b in args.trl_betas.split(",")]
    for i, beta in enumerate(betas):
        spec_path, out = work / f"trl_{i}.json", work / f"trl_{i}.out.json"
        spec_path.write_text(json.dumps({**spec, "beta": beta}))
        cmd = [str(trl_python), str(ROOT / "tools" / "bench_trainer_trl.py"), "--spec", str(spec_path)]
        cmd += ["--out", str(out), "--dump", str(work / f"trl_{i}.pt")]
        _run_worker(cmd, args.threads, work / f"trl_{i}.log")
        results.append((f"TRL GRPOTrainer (beta {beta:g})", json.loads(out.read_text())))
    spec_path, out = work / "ours.json", work / "ours.out.json"
    spec_path.write_text(json.dumps(spec))
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", "ours", "--spec", str(spec_path)]
    cmd += ["--out", str(out), "--dump", str(work / "trl_0.pt")]
    _run_worker(cmd, args.threads, work / "ours.log")
    results.append((f"ours ({args.ours_backend} backend)", json.loads(out.read_text())))

    rows = [_row(name, result, args.updates) for name, result in results]
    base = rows[0]
    n = rows[0]["samples"]
    print(
        f"# bench_trainer: {args.config} Qwen3-VL ({built['parameters'] / 1e6:,.1f}M params, random), "
        f"{device} ({results[0][1]['device']}), {precision}, {args.threads} threads; "
        f"{spec['prompts_per_batch']} prompts x G {spec['group_size']} = {n} samples, "
        f"{spec['completion_tokens']} completion tokens, "
        f"{_median(results[-1][1]['rounds'], 'prompt_tokens') / n:.0f} prompt tokens/sample, "
        f"{args.updates} updates/batch, {args.rounds} rounds (medians over rounds 2..{args.rounds}); "
        f"load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after\n"
    )
    cuda_col = device == "cuda"
    head = "| Side | Samples | Gen s/sample | Update s/sample | Total s/sample | Update CPU s/sample |"
    head += " Total CPU s/sample | Peak RSS MiB |"
    head += " CUDA peak MiB |" if cuda_col else ""
    head += " Train tok/s | Gen tok/s | Update vs TRL | Total vs TRL | Update CPU vs TRL |"
    print(head)
    print("|---" + "|---:" * (head.count("|") - 2) + "|")
    for row in rows:
        line = (
            f"| {row['side']} | {row['samples']} | {row['gen']:.4f} | {row['update']:.4f} | "
            f"{row['total']:.4f} | {row['update_cpu']:.4f} | {row['total_cpu']:.4f} | {row['rss']:,.0f} |"
        )
        line += f" {row['cuda']:,.0f} |" if cuda_col else ""
        line += (
            f" {row['train_tok_s']:,.0f} | {row['gen_tok_s']:,.0f} | {row['update'] / base['update']:.2f}x | "
            f"{row['total'] / base['total']:.2f}x | {row['update_cpu'] / base['update_cpu']:.2f}x |"
        )
        print(line)
    print(
        f"\nRatios against {base['side']}: below 1.00x ours is faster. Train tok/s = (prompt + completion "
        f"tokens) x updates / update time; wall {time.perf_counter() - started:.0f} s; logs in {work}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
