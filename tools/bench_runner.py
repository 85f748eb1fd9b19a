"""Runner benchmark: overhead per step (excluding model and env time) and the bundled suite on 1, 2, 4 envs.

    uv run python tools/bench_runner.py [--runs 4] [--envs 1 2 4] [--out runs/bench]

Uses the scripted policy (no model) on the embedded desktop. The runner's own time per
step is what it spends building the context, retrieving tools, parsing and writing the
record (PNG encoding runs on a background thread and is not in it); it comes from the
``timings.runner_s`` of every recorded step.
"""

from __future__ import annotations

import argparse
import shutil
import time
from pathlib import Path

import numpy as np
from hybrid_agent.policies import make_policy
from hybrid_agent.recorder import iter_episodes
from hybrid_agent.runner import RunConfig, Runner
from hybrid_agent.suite import load_suite


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--envs", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--out", default="runs/bench")
    args = parser.parse_args()
    tasks = load_suite("bundled")
    rows, overhead = [], []
    for envs in args.envs:
        out = Path(args.out) / f"envs{envs}"
        shutil.rmtree(out, ignore_errors=True)
        config = RunConfig(policy="scripted:tools", runs=args.runs, envs=envs, context="win4")
        started = time.perf_counter()
        result = Runner(config, make_policy("scripted:tools"), out, progress=False).evaluate(tasks)
        wall = time.perf_counter() - started
        records = list(iter_episodes(out))
        steps = [s for r in records for s in r.steps]
        overhead += [s["timings"]["runner_s"] * 1000 for s in steps if "runner_s" in s.get("timings", {})]
        scores = [r.end["score"] for r in records if r.end.get("score") is not None]
        rows.append((envs, result.finished, result.errors, len(steps), wall, result.finished / wall * 60,
                     float(np.mean(scores)) if scores else float("nan")))  # fmt: skip
    print(f"# bench_runner: bundled suite x {args.runs} runs, scripted:tools, win4, {len(overhead)} steps")
    print("| envs | episodes | errors | steps | wall s | episodes/min | mean score |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for envs, eps, errors, n_steps, wall, per_min, score in rows:
        print(f"| {envs} | {eps} | {errors} | {n_steps} | {wall:.1f} | {per_min:.1f} | {score:.2f} |")
    o = np.array(overhead)
    print(
        f"runner overhead per step (excl. model and env): mean {o.mean():.2f} ms, "
        f"median {np.median(o):.2f} ms, p95 {np.percentile(o, 95):.2f} ms, "
        f"max {o.max():.2f} ms (target <= 5 ms)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
