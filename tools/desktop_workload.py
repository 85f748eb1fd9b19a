"""Another desktop workload beside the test suite: one env that keeps clicking, typing and resetting.

The hardening issue asks that the desktop tests pass with such a neighbour on the
same machine (two cores shared by two desktops, LibreOffice loading in both).
Run it in the background and the suite in the foreground::

    uv run python tools/desktop_workload.py --seconds 3600 &
    uv run pytest -m desktop

It prints steps, resets and errors when it ends (SIGTERM, SIGINT or --seconds).
"""

from __future__ import annotations

import argparse
import random
import signal
import time

import gymnasium as gym

ACTIONS = (
    lambda r: {"action": "left_click", "coordinate": [r.randrange(1920), r.randrange(1080)]},
    lambda r: {"action": "type", "text": "".join(r.choice("abc123 =+") for _ in range(r.randrange(1, 12)))},
    lambda r: {"action": "key", "keys": [r.choice(["Down", "Right", "Return", "Tab"])]},
    lambda r: {"action": "scroll", "coordinate": [960, 540], "pixels": r.choice([-3, 3])},
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3600.0)
    parser.add_argument("--steps-per-episode", type=int, default=15)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    stop = [False]
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.__setitem__(0, True))
    rng = random.Random(args.seed)
    env = gym.make("osworld_mcp_env:OSWorldMCP-v0", task="calc-sum-column", max_steps=10_000)
    steps = resets = errors = 0
    deadline = time.monotonic() + args.seconds
    try:
        while not stop[0] and time.monotonic() < deadline:
            env.reset()
            resets += 1
            for _ in range(args.steps_per_episode):
                if stop[0]:
                    break
                action = {"name": "computer_use", "arguments": rng.choice(ACTIONS)(rng)}
                _obs, _r, _term, _trunc, info = env.step(action)
                steps += 1
                errors += "error" in info
    finally:
        env.close()
    print(f"workload: {steps} steps, {resets} resets, {errors} error values", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
