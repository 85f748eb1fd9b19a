"""Settle correctness: does the observation a GUI step returns show the settled screen?

For each task, every GUI input action kind of the action table is stepped in
turn, and each step's observation is compared with a frame taken after a
further ``--wait-s`` (2 s): a step whose screen changed afterwards returned a
frame of a screen still moving. A difference confined to a text caret's shape
(at most 3 px wide) is a blink, not a late paint, and is listed apart.

With ``--resets N``, each task is instead reset cold N times and each reset's first
observation is compared the same way: the settle wait that ends a reset (after the
task's setup, with no input to date the apps' reactions from) must not hand out a
first frame of a document still being drawn.

    uv run python tools/settle_check.py [--tasks calc-sum-column,...] [--rounds 3]
                                        [--settle-horizon-ms 800] [--resets N]

Prints the rate of settled observations and every miss; the test
``tests/osworld_mcp_env/guest/test_settle_correctness.py`` runs the same check on a
small sample.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, cast

import gymnasium as gym
import numpy as np
from osworld_mcp_env.actions import INPUT_ACTIONS
from osworld_mcp_env.env.core import OSWorldMCPEnv
from osworld_mcp_env.tasks.bundled import BUNDLED_TASK_IDS

ENV_ID = "osworld_mcp_env:OSWorldMCP-v0"
CARET_MAX_WIDTH = 3  # px: a blinking text caret; anything wider is a real change


@dataclass(frozen=True)
class Outcome:
    """One step's observation against the frame taken ``wait_s`` later."""

    task: str
    step: int
    action: dict
    settle_ms: float
    """The step's settle wait, or a reset's whole time."""
    changed_pixels: int
    bbox: tuple[int, int, int, int] | None
    """(left, top, right, bottom) of the changed pixels, or None when none changed."""

    @property
    def settled(self) -> bool:
        """The observation equals the later frame."""
        return self.changed_pixels == 0

    @property
    def caret_blink(self) -> bool:
        """Only a caret-sized column changed: the caret blinked, the screen was settled."""
        return self.bbox is not None and self.bbox[2] - self.bbox[0] <= CARET_MAX_WIDTH

    def describe(self) -> str:
        """One line for the report."""
        args = {k: v for k, v in self.action.items() if k != "action"}
        wait = "a reset" if self.action["action"] == "reset" else "a settle"
        return (
            f"{self.task} step {self.step} {self.action['action']} {args}: {self.changed_pixels} px "
            f"changed in {self.bbox} after {wait} of {self.settle_ms:.0f} ms"
        )


def action_plan(width: int, height: int) -> list[dict[str, Any]]:
    """Every input action kind once, at points of the app's document area, menus closed again."""

    def at(fx: float, fy: float) -> list[int]:
        return [round(fx * width), round(fy * height)]

    plan: list[dict[str, Any]] = [
        {"action": "left_click", "coordinate": at(0.30, 0.40)},
        {"action": "double_click", "coordinate": at(0.35, 0.45)},
        {"action": "triple_click", "coordinate": at(0.30, 0.50)},
        {"action": "type", "text": "Settle check 123"},
        {"action": "key", "keys": ["Return"]},
        {"action": "key", "keys": ["ctrl", "z"]},
        {"action": "scroll", "pixels": -300, "coordinate": at(0.5, 0.5)},
        {"action": "scroll", "pixels": 300, "coordinate": at(0.5, 0.5)},
        {"action": "hscroll", "pixels": 100, "coordinate": at(0.5, 0.5)},
        {"action": "hscroll", "pixels": -100, "coordinate": at(0.5, 0.5)},
        {"action": "mouse_move", "coordinate": at(0.6, 0.3)},
        {"action": "left_click_drag", "start_coordinate": at(0.25, 0.4), "coordinate": at(0.4, 0.5)},
        {"action": "right_click", "coordinate": at(0.5, 0.5)},
        {"action": "key", "keys": ["Escape"]},
        {"action": "middle_click", "coordinate": at(0.45, 0.55)},
        {"action": "key", "keys": ["Escape"]},
    ]
    missing = set(INPUT_ACTIONS) - {a["action"] for a in plan}
    if missing:
        raise ValueError(f"The plan misses input actions {sorted(missing)}; add them, every kind is checked.")
    return plan


def check_task(env: gym.Env, task: str, rounds: int, wait_s: float) -> Iterator[Outcome]:
    """Resets ``env`` to ``task`` and steps the plan ``rounds`` times, comparing each observation."""
    env.reset(options={"task": task})
    desktop = cast(OSWorldMCPEnv, env.unwrapped).desktop
    width, height = desktop.screen_size
    step = 0
    for _ in range(rounds):
        for action in action_plan(width, height):
            call = {"name": "computer_use", "arguments": action}
            obs, _reward, _terminated, _truncated, info = env.step(call)
            if "error" in info:
                raise RuntimeError(f"{task}: step {action} failed: {info['error']}")
            time.sleep(wait_s)  # the definition of "settled": nothing changes for this long
            later = desktop.screenshot().pixels
            yield compare(task, step, action, info["timings"].get("settle_ms", 0.0), obs["screenshot"], later)
            step += 1


def check_resets(env: gym.Env, task: str, resets: int, wait_s: float) -> Iterator[Outcome]:
    """Resets ``env`` to ``task`` cold ``resets`` times (after a first one that starts the desktop)."""
    env.reset(options={"task": task})
    desktop = cast(OSWorldMCPEnv, env.unwrapped).desktop
    for index in range(resets):
        started = time.perf_counter()
        obs, _info = env.reset(options={"task": task})
        reset_ms = (time.perf_counter() - started) * 1000
        time.sleep(wait_s)
        later = desktop.screenshot().pixels
        yield compare(task, index, {"action": "reset"}, reset_ms, obs["screenshot"], later)


def compare(
    task: str, step: int, action: dict, settle_ms: float, seen: np.ndarray, later: np.ndarray
) -> Outcome:
    """The changed pixels between the observation and the later frame, and their bounding box."""
    changed = np.any(seen != later, axis=-1)
    count = int(changed.sum())
    bbox = None
    if count:
        rows, cols = np.nonzero(changed)
        bbox = (int(cols.min()), int(rows.min()), int(cols.max()) + 1, int(rows.max()) + 1)
    return Outcome(task, step, action, settle_ms, count, bbox)


def report(outcomes: list[Outcome]) -> str:
    """The rate (a caret blink counts as settled) and every miss and blink, one line each."""
    misses = [o for o in outcomes if not o.settled and not o.caret_blink]
    blinks = [o for o in outcomes if not o.settled and o.caret_blink]
    rate = 100 * (len(outcomes) - len(misses)) / len(outcomes) if outcomes else 0.0
    lines = [
        f"settled observations: {len(outcomes) - len(misses)}/{len(outcomes)} = {rate:.1f} % "
        f"(goal >= 99 %), of which {len(blinks)} differ only by a caret blink; "
        f"load average {', '.join(f'{x:.2f}' for x in os.getloadavg())}"
    ]
    lines += [f"MISS  {o.describe()}" for o in misses]
    lines += [f"BLINK {o.describe()}" for o in blinks]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default=",".join(BUNDLED_TASK_IDS), help="comma-separated task ids")
    parser.add_argument("--rounds", type=int, default=3, help="times the plan runs per task")
    parser.add_argument("--wait-s", type=float, default=2.0, help="seconds from step to later frame")
    parser.add_argument(
        "--settle-horizon-ms", type=float, help="the backend's settle_horizon_ms (default: the guest's)"
    )
    parser.add_argument("--resets", type=int, default=0, help="check N cold resets per task instead of steps")
    args = parser.parse_args()
    options = {} if args.settle_horizon_ms is None else {"settle_horizon_ms": args.settle_horizon_ms}
    env = gym.make(ENV_ID, enable_mcp=False, max_steps=1_000_000, backend_options=options)
    outcomes: list[Outcome] = []
    try:
        for task in args.tasks.split(","):
            checks = (
                check_resets(env, task, args.resets, args.wait_s)
                if args.resets
                else check_task(env, task, args.rounds, args.wait_s)
            )
            for outcome in checks:
                outcomes.append(outcome)
                print(("ok    " if outcome.settled else "diff  ") + outcome.describe(), flush=True)
    finally:
        env.close()
    print(report(outcomes))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
