"""TRL's side of tools/bench_trainer.py: ``GRPOTrainer`` on the saved model and prompts, timed by phase.

Runs in the benchmark's own virtual environment (TRL, accelerate, datasets), never in the
workspace: it imports nothing of the project. tools/bench_trainer.py starts it with
``--spec FILE`` (JSON: model and prompt files, batch shape, precision, threads, beta) and
reads back ``--out FILE`` (JSON: per-round phase times, token counts, peak memory) and
``--dump FILE`` (torch: each round's prompt ids, completion ids, rollout-time
log-probabilities and advantages, so that our trainer updates on exactly these samples).

Phases per round (one generation batch, then ``num_iterations`` updates on it):
``generate`` is ``GRPOTrainer._generate`` (chat template, image processing, ``generate``,
decode); ``score`` is the rest of ``_generate_and_score_completions`` (rewards, advantages,
the no-grad forward for old log-probabilities, the reference model's forward when beta > 0);
``update`` is every optimizer step of the round (forward, loss, backward, clip, AdamW)
minus the two above.
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from pathlib import Path
from typing import Any

import torch
from datasets import Dataset
from PIL import Image
from transformers import Qwen3VLForConditionalGeneration, Qwen3VLProcessor, TrainerCallback
from trl import GRPOConfig, GRPOTrainer


class ImageOnlyQwen3VLProcessor(Qwen3VLProcessor):
    """Qwen3VLProcessor without the video processor, whose class needs torchvision (absent here)."""

    def __init__(self, image_processor=None, tokenizer=None, chat_template=None, **kwargs):
        super().__init__(image_processor, tokenizer, None, chat_template=chat_template, **kwargs)


def reward_by_length(completions: list[Any], **_: Any) -> list[float]:
    """A cheap deterministic reward that differs within a group (its value does not matter here)."""
    return [float(len(c[0]["content"]) % 7) for c in completions]


class PhaseTimer(TrainerCallback):
    """Wall and CPU time of every optimizer step (generation happens inside a round's first step)."""

    def __init__(self) -> None:
        self.steps: list[tuple[float, float]] = []
        self._start = (0.0, 0.0)

    def on_step_begin(self, args, state, control, **kwargs):
        self._sync()
        self._start = (time.perf_counter(), time.process_time())

    def on_step_end(self, args, state, control, **kwargs):
        self._sync()
        self.steps.append((time.perf_counter() - self._start[0], time.process_time() - self._start[1]))

    @staticmethod
    def _sync() -> None:
        if torch.cuda.is_available():
            torch.cuda.synchronize()


class TimedGRPOTrainer(GRPOTrainer):
    """GRPOTrainer that times generation and scoring and keeps each round's batch."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.generate_s: list[tuple[float, float]] = []  # (wall, CPU)
        self.score_s: list[tuple[float, float]] = []
        self.batches: list[dict[str, Any]] = []

    def _generate(self, prompts: list):
        wall, cpu = time.perf_counter(), time.process_time()
        out = super()._generate(prompts)
        self.generate_s.append((time.perf_counter() - wall, time.process_time() - cpu))
        return out

    def _generate_and_score_completions(self, inputs):
        wall, cpu = time.perf_counter(), time.process_time()
        out = super()._generate_and_score_completions(inputs)
        generate = self.generate_s[-1]
        self.score_s.append(
            (time.perf_counter() - wall - generate[0], time.process_time() - cpu - generate[1])
        )
        prompt_mask = out["prompt_mask"].bool().cpu()
        completion_mask = out["completion_mask"].bool().cpu()
        old = out.get("old_per_token_logps")
        self.batches.append(
            {
                "prompts": [
                    row[m].tolist() for row, m in zip(out["prompt_ids"].cpu(), prompt_mask, strict=True)
                ],
                "completions": [
                    row[m].tolist()
                    for row, m in zip(out["completion_ids"].cpu(), completion_mask, strict=True)
                ],
                "old_logprobs": None
                if old is None
                else [row[m].tolist() for row, m in zip(old.float().cpu(), completion_mask, strict=True)],
                "advantages": out["advantages"].float().cpu().tolist(),
            }
        )
        return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spec", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--dump")
    args = parser.parse_args()
    spec = json.loads(Path(args.spec).read_text())
    torch.set_num_threads(spec["threads"])
    torch.manual_seed(spec["seed"])
    cuda = torch.cuda.is_available()

    model_dir = spec["model_dir"]
    processor = ImageOnlyQwen3VLProcessor.from_pretrained(model_dir)
    model = Qwen3VLForConditionalGeneration.from_pretrained(model_dir, dtype=torch.float32)
    rows = spec["prompts"]
    dataset = Dataset.from_dict(
        {
            "prompt": [
                [{"role": "system", "content": r["system"]}, {"role": "user", "content": r["user"]}]
                for r in rows
            ],
            "image": [Image.open(r["image"]).convert("RGB") for r in rows],
        }
    )
    n = spec["prompts_per_batch"] * spec["group_size"]
    length = spec["completion_tokens"]
    config = GRPOConfig(
        output_dir=spec["work_dir"],
        per_device_train_batch_size=n,
        gradient_accumulation_steps=1,
        steps_per_generation=1,
        num_generations=spec["group_size"],
        num_iterations=spec["updates"],
        max_steps=spec["rounds"] * spec["updates"],
        max_completion_length=length,
        # Every completion is exactly `length` tokens (EOS is held back until then) and never holds
        # a vision placeholder: our sampler bans those four ids too.
        generation_kwargs={"min_new_tokens": length, "suppress_tokens": spec["banned_ids"]},
        temperature=1.0,
        top_p=1.0,
        top_k=0,
        beta=spec["beta"],
        epsilon=0.2,
        loss_type="dapo",  # token mean over the whole batch, as ours
        scale_rewards="group",
        learning_rate=5e-6,
        lr_scheduler_type="cosine",
        warmup_steps=0,
        weight_decay=0.0,
        max_grad_norm=1.0,
        optim="adamw_torch",  # torch.optim.AdamW with its default implementation, as ours
        gradient_checkpointing=False,  # TRL's default is on; ours does not checkpoint
        bf16=spec["precision"] == "bf16",
        use_cpu=not cuda,
        shuffle_dataset=False,
        seed=spec["seed"],
        report_to="none",
        logging_strategy="no",
        save_strategy="no",
        disable_tqdm=True,
        log_completions=False,
        dataloader_num_workers=0,
    )
    timer = PhaseTimer()
    trainer = TimedGRPOTrainer(
        model=model,
        reward_funcs=reward_by_length,
        args=config,
        train_dataset=dataset,
        processing_class=processor,
        callbacks=[timer],
    )
    started = time.perf_counter()
    trainer.train()
    wall = time.perf_counter() - started

    updates = spec["updates"]
    rounds = []
    for r, batch in enumerate(trainer.batches):
        steps = timer.steps[r * updates : (r + 1) * updates]
        step_s, step_cpu = sum(s[0] for s in steps), sum(s[1] for s in steps)
        (generate, generate_cpu), (score, score_cpu) = trainer.generate_s[r], trainer.score_s[r]
        rounds.append(
            {
                "generate_s": generate,
                "score_s": score,
                "update_s": step_s - generate - score,
                "total_s": step_s,
                "update_cpu_s": step_cpu - generate_cpu - score_cpu,
                "total_cpu_s": step_cpu,
                "prompt_tokens": sum(len(p) for p in batch["prompts"]),
                "completion_tokens": sum(len(c) for c in batch["completions"]),
            }
        )
    result = {
        "samples": n,
        "rounds": rounds,
        "train_wall_s": wall,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "cuda_peak_mib": torch.cuda.max_memory_allocated() / 2**20 if cuda else None,
        "device": torch.cuda.get_device_name() if cuda else "cpu",
        "ref_model": trainer.ref_model is not None,
    }
    Path(args.out).write_text(json.dumps(result))
    if args.dump:
        torch.save(trainer.batches, args.dump)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
