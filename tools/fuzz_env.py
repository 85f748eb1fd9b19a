"""Fuzz ``env.step`` with hostile actions on a real desktop and print what came back.

Seeded: the same seed, task and flags draw the same actions (see
``osworld_mcp_env.devkit.fuzz.HostileActions`` for the classes). Resets every
``--reset-every`` steps and after an episode ends. Prints one Markdown table:
actions, exceptions out of ``step``/``reset`` (each distinct traceback listed),
steps over the deadline, the error-code histogram (overall and per fuzz class)
and latency percentiles. Exits 1 when any exception or overrun occurred.

    uv run python tools/fuzz_env.py [--actions 10000] [--seed 0] [--task calc-sum-column] [--bash]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import gymnasium as gym
from osworld_mcp_env.devkit.fuzz import FuzzReport, run_fuzz

ENV_ID = "osworld_mcp_env:OSWorldMCP-v0"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--actions", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--task", default="calc-sum-column", help="a bundled task id")
    parser.add_argument("--reset-every", type=int, default=100)
    parser.add_argument("--step-timeout", type=float, default=10.0, help="the env's step_timeout_s")
    parser.add_argument("--bash", action="store_true", help="enable the bash channel and fuzz it")
    parser.add_argument("--no-mcp", action="store_true", help="run without the MCP tool host")
    parser.add_argument("--progress", type=int, default=500, help="print a progress line every N steps")
    args = parser.parse_args()

    env = gym.make(
        ENV_ID,
        task=args.task,
        step_timeout_s=args.step_timeout,
        enable_bash=args.bash,
        enable_mcp=not args.no_mcp,
        max_steps=args.reset_every + 1,  # the fuzzer's resets, not truncation, end episodes
    )
    wall = time.monotonic()

    def progress(index: int, report: FuzzReport) -> None:
        if args.progress and (index + 1) % args.progress == 0:
            print(
                f"[{time.monotonic() - wall:.0f} s] {index + 1} steps, {len(report.exceptions)} exceptions, "
                f"{len(report.over_deadline)} over the deadline, p95 {report.percentile_ms(95):.0f} ms",
                file=sys.stderr,
                flush=True,
            )

    try:
        report = run_fuzz(
            env,
            actions=args.actions,
            seed=args.seed,
            reset_every=args.reset_every,
            enable_bash=args.bash,
            on_step=progress,
        )
    finally:
        env.close()
    print(
        f"# fuzz_env: task {args.task}, seed {args.seed}, {args.actions} actions, "
        f"step_timeout_s {args.step_timeout:g}, bash {'on' if args.bash else 'off'}, "
        f"MCP {'off' if args.no_mcp else 'on'}, {os.cpu_count()} CPUs, wall {time.monotonic() - wall:.0f} s"
    )
    print(report.table())
    return 1 if report.exceptions or report.over_deadline else 0


if __name__ == "__main__":
    raise SystemExit(main())
