"""Peak memory of sampling a long response and scoring it, full-vocabulary logits kept or not.

A Qwen3-VL with seeded random weights (one small layer, Qwen's 151,936-token vocabulary,
so the full-vocabulary values dominate) samples ``--rows`` responses of exactly
``--tokens`` new tokens after a text prompt, then the responses are scored with a
backward pass, each phase in a process of its own so that its peak RSS is its alone:

* ``sample/before``: what ``HFTrainablePolicy.sample`` did: ``generate(output_logits=True)``,
  ``torch.stack`` of every step's fp32 logits, then one log-softmax over all of them;
* ``sample/after``: the trainable policy's :class:`~grpo_trainer.model.hf_policy.SampledLogprobs`
  recorder (one ``(B, V)`` distribution alive at a time);
* ``score/before``: one log-softmax over the ``(B, L, V)`` logits, gather, backward;
* ``score/after``: :func:`~grpo_trainer.model.hf_policy.token_logprobs` (chunks recomputed in backward),
  ``--chunk`` tokens a chunk (the policy's default, 1,024, would be this whole small batch).

The peak is the process's ``ru_maxrss`` minus its RSS when the phase began (MB).

    uv run python tools/bench_generation_memory.py [--rows 2] [--tokens 512] [--vocab 151936] [--chunk 128]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "hybrid_agent"))  # the tiny processor and model of the tests

MODES = ("sample/before", "sample/after", "score/before", "score/after")


def _rss_mb() -> float:
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * resource.getpagesize() / 2**20


def _model(vocab: int):
    """The tests' tiny Qwen3-VL (tests/hybrid_agent/tiny_qwen.py) with a ``vocab``-token vocabulary."""
    import tiny_qwen

    return tiny_qwen.tiny_model(tiny_qwen.processor(tiny_qwen.small_image_processor()), vocab_size=vocab)


def _phase(mode: str, rows: int, tokens: int, vocab: int, chunk: int) -> dict[str, float]:
    """Runs one mode in this process; returns its peak over the starting RSS."""
    from grpo_trainer.model.hf_policy import SampledLogprobs, scaled_log_softmax, token_logprobs
    from transformers import GenerationConfig, LogitsProcessorList

    model = _model(vocab)
    banned = [model.config.image_token_id, model.config.video_token_id]
    prompt = torch.randint(0, 1000, (rows, 64), generator=torch.Generator().manual_seed(1))
    settings = dict(do_sample=True, top_k=0, top_p=1.0, max_new_tokens=tokens, min_new_tokens=tokens)
    torch.set_grad_enabled(mode.startswith("score"))
    start = _rss_mb()
    if mode == "sample/before":
        config = GenerationConfig(
            **settings,
            temperature=0.7,
            suppress_tokens=banned,
            output_logits=True,
            return_dict_in_generate=True,
        )
        out = model.generate(input_ids=prompt, generation_config=config)
        new = out.sequences[:, prompt.shape[1] :]
        logps = scaled_log_softmax(torch.stack(out.logits, dim=1), 0.7, banned)
        picked = logps.gather(-1, new.unsqueeze(-1)).squeeze(-1)
    elif mode == "sample/after":
        recorder = SampledLogprobs(0.7, banned)
        config = GenerationConfig(**settings, temperature=1.0, return_dict_in_generate=True)
        out = model.generate(
            input_ids=prompt, generation_config=config, logits_processor=LogitsProcessorList([recorder])
        )
        picked = recorder.picked(out.sequences)
    else:
        ids = torch.randint(0, 1000, (rows, tokens))
        logits = torch.randn(rows, tokens, vocab, requires_grad=True)  # what the model's lm_head returns
        if mode == "score/before":
            picked = scaled_log_softmax(logits, 0.7, banned).gather(-1, ids.unsqueeze(-1)).squeeze(-1)
        else:
            picked = token_logprobs(logits, ids, 0.7, banned, chunk)
        picked.sum().backward()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 - start
    return {"peak_mb": peak, "tokens": float(picked.shape[1])}


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=2)
    parser.add_argument("--tokens", type=int, default=512)
    parser.add_argument("--vocab", type=int, default=151936)
    parser.add_argument("--chunk", type=int, default=128, help="tokens per scoring chunk")
    parser.add_argument("--mode", choices=MODES, help=argparse.SUPPRESS)  # one phase, in a child process
    args = parser.parse_args()
    if args.mode:
        print(json.dumps(_phase(args.mode, args.rows, args.tokens, args.vocab, args.chunk)))
        return 0
    copy_mb = args.rows * args.tokens * args.vocab * 4 / 2**20
    print(
        f"rows {args.rows} x new tokens {args.tokens} x vocab {args.vocab}: one fp32 copy is {copy_mb:.0f} MB"
    )
    print(f"{'phase':<14} {'peak MB':>9}")
    for mode in MODES:
        command = [sys.executable, __file__, "--mode", mode]
        command += ["--rows", str(args.rows), "--tokens", str(args.tokens), "--vocab", str(args.vocab)]
        command += ["--chunk", str(args.chunk)]
        result = json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout)
        print(f"{mode:<14} {result['peak_mb']:>9.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
