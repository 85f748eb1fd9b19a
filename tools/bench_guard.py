"""What the stale-frame guard adds to a GUI step, and what one layout sample costs in the guest.

Clicks two Calc cells in turn, ``--steps`` times each way, interleaved: with the guard
off (``stale_guard=False``, no ``frame_id``), and on with every click citing the frame
it was read from (the agent's default). Also times ``GET /windows`` (the layout sample
with its JSON) on a still desktop (cached) and right after a window change (read again).
Prints a table with the load average: every number depends on it.

    uv run python tools/bench_guard.py [--steps 30]
"""

from __future__ import annotations

import argparse
import time

import gymnasium as gym
from bench_common import CLICKS, ENV_ID, load_average, median_ms, p95_ms, print_table, timed_step


def _clicks(env: gym.Env, steps: int, cite: bool) -> list[float]:
    _obs, info = env.reset(options={"task": "calc-sum-column"})
    times = []
    for i in range(steps):
        action = CLICKS[i % 2]
        if cite:
            action = {**action, "arguments": {**action["arguments"], "frame_id": info["frame_id"]}}
        seconds, info = timed_step(env, action)
        times.append(seconds)
    return times


def main() -> None:
    """Runs the benchmark and prints its table."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    off = gym.make(ENV_ID, enable_mcp=False, stale_guard=False)
    on = gym.make(ENV_ID, enable_mcp=False)
    try:
        rounds: dict[str, list[float]] = {"off": [], "on": []}
        for _ in range(2):  # interleaved, so that drift in the machine's load hits both
            rounds["off"] += _clicks(off, args.steps // 2, cite=False)
            rounds["on"] += _clicks(on, args.steps // 2, cite=True)
        client = on.unwrapped.desktop.client
        still, changed = [], []
        for _ in range(args.steps):
            start = time.perf_counter()
            client.layout()
            still.append(time.perf_counter() - start)
            # Straight to the guest, with no observation after: nothing reads the layout between.
            client.gui({"action": "key", "arguments": {"keys": ["alt", "f"]}})
            client.gui({"action": "key", "arguments": {"keys": ["Escape"]}})
            start = time.perf_counter()
            client.layout()  # the first sample after a menu opened and closed: read again
            changed.append(time.perf_counter() - start)
    finally:
        off.close()
        on.close()
    rows = [
        ["click step, guard off", f"{median_ms(rounds['off']):.1f}", f"{p95_ms(rounds['off']):.1f}"],
        [
            "click step, guard on, frame cited",
            f"{median_ms(rounds['on']):.1f}",
            f"{p95_ms(rounds['on']):.1f}",
        ],
        ["GET /windows with the sample, still desktop", f"{median_ms(still):.2f}", f"{p95_ms(still):.2f}"],
        [
            "GET /windows with the sample, after a change",
            f"{median_ms(changed):.2f}",
            f"{p95_ms(changed):.2f}",
        ],
    ]
    print(f"load average: {load_average()}")
    print_table(["what", "median ms", "p95 ms"], rows)


if __name__ == "__main__":
    main()
