"""Runner benchmark: per-episode scheduling against lockstep, and the runner's own cost per step.

    uv run python tools/bench_runner.py [--runs 4] [--envs 4] [--out runs/bench]

Runs the bundled suite (its episodes take 2 to 9 steps: mixed lengths) with the
scripted policy (no model) on ``--envs`` embedded desktops, once per schedule, in one
process one after the other:

* ``lockstep``: every policy call waits until each env at work has asked (the loop the
  runner had before the shared agent loop: the slowest env of a round sets its pace,
  and a finished env waits for the round to end before it resets);
* ``per_episode``: each env runs its own episode and starts its next task at once.

It prints episodes per hour for both, and the ratio. The runner's own time per step is
what it spends building the context, retrieving tools, parsing and writing the record
(PNG encoding runs on a background thread and is not in it); it comes from the
``timings.runner_s`` of every recorded step (wall time, so with more desktops than
cores it includes waiting for a core).
"""

from __future__ import annotations

import argparse
import shutil
import time
from pathlib import Path

import numpy as np
from hybrid_agent.policies import make_policy
from hybrid_agent.recorder import iter_episodes
from hybrid_agent.runner import SCHEDULES, RunConfig, Runner
from hybrid_agent.suite import load_suite


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=4, help="runs of each bundled task per schedule")
    parser.add_argument("--envs", type=int, default=4)
    parser.add_argument("--schedules", nargs="+", default=["lockstep", "per_episode"], choices=SCHEDULES)
    parser.add_argument("--out", default="runs/bench")
    args = parser.parse_args()
    tasks = load_suite("bundled")
    rows = []
    for schedule in args.schedules:
        out = Path(args.out) / schedule
        shutil.rmtree(out, ignore_errors=True)
        config = RunConfig(policy="scripted:tools", runs=args.runs, envs=args.envs, schedule=schedule)
        started = time.perf_counter()
        result = Runner(config, make_policy("scripted:tools"), out, progress=False).evaluate(tasks)
        wall = time.perf_counter() - started
        records = list(iter_episodes(out))
        lengths = [len(r.steps) for r in records]
        overhead = np.array([s["timings"]["runner_s"] * 1000 for r in records for s in r.steps])
        scores = [r.end["score"] for r in records if r.end.get("score") is not None]
        rows.append(
            {
                "schedule": schedule,
                "episodes": result.finished,
                "errors": result.errors,
                "lengths": f"{min(lengths)}-{max(lengths)}",
                "steps": sum(lengths),
                "wall": wall,
                "per_hour": result.finished / wall * 3600,
                "score": float(np.mean(scores)) if scores else float("nan"),
                "median_ms": float(np.median(overhead)),
                "p95_ms": float(np.percentile(overhead, 95)),
            }
        )
    base = next((row["per_hour"] for row in rows if row["schedule"] == "lockstep"), None)
    print(
        f"# bench_runner: bundled suite ({len(tasks)} tasks) x {args.runs} runs, scripted:tools, win4, "
        f"{args.envs} envs, one run per schedule"
    )
    print(
        "| schedule | episodes | errors | steps/episode | steps | wall s | episodes/h | vs lockstep | score "
        "| runner ms/step median | p95 |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        ratio = f"{r['per_hour'] / base:.2f}x" if base else "-"
        print(
            f"| {r['schedule']} | {r['episodes']} | {r['errors']} | {r['lengths']} | {r['steps']} "
            f"| {r['wall']:.1f} | {r['per_hour']:.0f} | {ratio} | {r['score']:.2f} | {r['median_ms']:.1f} "
            f"| {r['p95_ms']:.1f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
