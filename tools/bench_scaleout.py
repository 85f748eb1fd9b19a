"""Steps/s of a group vector env with its desktops in Ray actors, against the plain sync one.

For 1 and 2 members (``--members``), in one run on one machine: the sync vector env
(``make_group_env(executor="sync")``: the desktops in this process, stepped one after
another) and the Ray one (``executor="ray"``: one actor per desktop on a local Ray
instance, stepped concurrently), each reset on the calc task then stepped ``--steps``
times with one GUI action: ``wait`` (0 s: no input, the settle wait and a 1080p frame,
so the hosting's own cost shows) or ``type`` (one character into the sheet: the screen
changes, the settle wait waits for it, as in an agent's step). Prints member-steps/s
(every member's steps over the wall time) and the mean latency of one vector step.
The load average is printed with the table: on a shared machine every number depends
on it.

    uv run --frozen python tools/bench_scaleout.py [--steps 20] [--members 1,2] [--actions wait,type]

Under ``uv run``, Ray's hook would start its workers through ``uv run`` again; they share
this venv, so the hook is turned off here (``RAY_ENABLE_UV_RUN_RUNTIME_ENV=0``).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from functools import partial

import gymnasium as gym
from bench_common import load_average  # tools/ is on sys.path when this file runs as a script

ACTIONS = {
    "wait": json.dumps({"name": "computer_use", "arguments": {"action": "wait", "time": 0}}),
    "type": json.dumps({"name": "computer_use", "arguments": {"action": "type", "text": "7"}}),
}


def measure(executor: str, members: int, steps: int, action: str) -> tuple[float, float, float]:
    """(reset s, member-steps/s, ms per vector step) of one vector env."""
    from grpo_trainer.rollouts.vector import make_group_env

    env_fn = partial(gym.make, "osworld_mcp_env:OSWorldMCP-v0", enable_mcp=False)
    venv = make_group_env(env_fn, members, executor=executor)
    try:
        started = time.perf_counter()
        venv.reset(seed=0, options={"task": "calc-sum-column"})
        reset_s = time.perf_counter() - started
        venv.step((action,) * members)  # the first step pays one-off costs
        started = time.perf_counter()
        for _ in range(steps):
            venv.step((action,) * members)
        wall = time.perf_counter() - started
    finally:
        venv.close()
    return reset_s, members * steps / wall, 1000 * wall / steps


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--members", default="1,2", help="comma-separated member counts")
    parser.add_argument("--actions", default="wait,type", help=f"comma-separated, of {sorted(ACTIONS)}")
    args = parser.parse_args()
    os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
    import ray

    counts = [int(n) for n in args.members.split(",")]
    wall = time.perf_counter()
    print(f"# bench_scaleout: load average at the start {load_average()}", flush=True)
    started = time.perf_counter()
    ray.init(num_cpus=max(counts), include_dashboard=False, log_to_driver=False)
    print(f"# {os.cpu_count()} CPUs; local Ray started in {time.perf_counter() - started:.1f} s", flush=True)
    print("| action | members | executor | reset s | member-steps/s | ms per vector step |")
    print("|---|---:|---|---:|---:|---:|")
    try:
        for name in args.actions.split(","):
            for members in counts:
                for executor in ("sync", "ray"):
                    reset_s, rate, ms = measure(executor, members, args.steps, ACTIONS[name])
                    row = f"| {name} | {members} | {executor} | {reset_s:.1f} | {rate:.1f} | {ms:.0f} |"
                    print(row, flush=True)
    finally:
        ray.shutdown()
    print(f"wall {time.perf_counter() - wall:.0f} s, load average at the end {load_average()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
