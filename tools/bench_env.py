"""Benchmark of the embedded desktop and the env, in one run on one machine.

Prints one table: the raw floor (an MIT-SHM grab plus one XTest click, inside a
sandbox, no env), ``env.step`` for a no-op GUI action (with its settle wait shown
apart), ``reset`` to the first observation of the calc task, steps/s with 1, 2
and 4 envs (``AsyncVectorEnv``), and memory per env. Ratios are against the floor
measured in the same run. Targets (issue #2): step overhead <= 2x the floor plus
settle time, reset <= 1.5 s, <= 0.7 GB per env.

    uv run python tools/bench_env.py [--steps 30] [--resets 5] [--envs 1,2,4]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import gymnasium as gym

ENV_ID = "osworld_mcp_env:OSWorldMCP-v0"
NOOP = {"name": "computer_use", "arguments": {"action": "mouse_move", "coordinate": [960, 540]}}
# The script writes its JSON to a file named by argv[1]: stdout is not ours (python-xlib prints
# warnings there, e.g. about an empty ~/.Xauthority on a fresh machine).
FLOOR_SCRIPT = """
import json, statistics, sys, time, mss
from Xlib import X, display
from Xlib.ext import xtest
d = display.Display()
sct = mss.MSS()
grab, click = [], []
for _ in range({n}):
    t = time.perf_counter(); sct.grab(sct.monitors[0]); grab.append(time.perf_counter() - t)
    t = time.perf_counter()
    xtest.fake_input(d, X.MotionNotify, x=5, y=5)
    xtest.fake_input(d, X.ButtonPress, 1); xtest.fake_input(d, X.ButtonRelease, 1); d.sync()
    click.append(time.perf_counter() - t)
with open(sys.argv[1], "w") as out:
    json.dump({{"grab_ms": statistics.median(grab) * 1e3, "click_ms": statistics.median(click) * 1e3}}, out)
"""
FLOOR_RESULT = "/tmp/bench-floor.json"


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def p95_ms(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))] * 1000


def run_floor(desktop, steps: int) -> dict[str, float]:
    """The raw floor measured inside the sandbox; its JSON comes back through a file, not stdout."""
    script = [desktop.config.guest_python, "-c", FLOOR_SCRIPT.format(n=steps), FLOOR_RESULT]
    result = desktop.execute(script)
    data = desktop.read_file(FLOOR_RESULT)
    if not result.ok or data is None:
        raise RuntimeError(f"The floor script failed ({result.returncode}): {result.error[-2000:]}")
    return json.loads(data)


def bench_floor_and_single(steps: int, resets: int) -> dict[str, float]:
    env = gym.make(ENV_ID, task="calc-sum-column", enable_mcp=False)
    try:
        env.reset()  # first start builds the LibreOffice profile template once per host
        desktop = env.unwrapped.desktop
        floor = run_floor(desktop, steps)
        reset_s = []
        for _ in range(resets):
            start = time.perf_counter()
            env.reset()
            reset_s.append(time.perf_counter() - start)
        step_s, settle_s, observe_s = [], [], []
        for _ in range(steps):
            start = time.perf_counter()
            _obs, _r, _t, _tr, info = env.step(NOOP)
            step_s.append(time.perf_counter() - start)
            settle_s.append(info["timings"].get("settle_ms", 0.0) / 1000)
            observe_s.append(info["timings"]["observe_ms"] / 1000)
        frame_s = []
        for _ in range(steps):
            start = time.perf_counter()
            desktop.screenshot()
            frame_s.append(time.perf_counter() - start)
        rss, pss = _memory(desktop.processes())
        return {
            **floor,
            "frame_ms": median_ms(frame_s),
            "step_ms": median_ms(step_s),
            "step_p95_ms": p95_ms(step_s),
            "settle_ms": median_ms(settle_s),
            "observe_ms": median_ms(observe_s),
            "reset_ms": median_ms(reset_s),
            "reset_p95_ms": p95_ms(reset_s),
            "rss_mb": rss / 2**20,
            "pss_mb": pss / 2**20,
        }
    finally:
        env.close()


def bench_vector(n_envs: int, steps: int, enable_mcp: bool) -> dict[str, float]:
    envs = gym.vector.AsyncVectorEnv(
        [lambda: gym.make(ENV_ID, task="calc-sum-column", enable_mcp=enable_mcp)] * n_envs,
        shared_memory=False,
    )
    try:
        envs.reset()
        action = tuple(json.dumps(NOOP) for _ in range(n_envs))
        start = time.perf_counter()
        for _ in range(steps):
            envs.step(action)
        elapsed = time.perf_counter() - start
        rss, pss = _memory(_sandbox_pids())
        return {
            "steps_per_s": n_envs * steps / elapsed,
            "rss_mb": rss / n_envs / 2**20,
            "pss_mb": pss / n_envs / 2**20,
        }
    finally:
        envs.close()


def _sandbox_pids() -> list[int]:
    """Processes of this benchmark's sandboxes: descendants of this process that run as a sandbox uid.

    Other desktops on the host (another user's tests) are not descendants, so they do not count.
    """
    from osworld_mcp_env.backends.userns import HOST_UID_BASE

    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    parents[int(entry)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    mine = {os.getpid()}
    grew = True
    while grew:
        found = {pid for pid, parent in parents.items() if parent in mine} - mine
        mine |= found
        grew = bool(found)
    pids = []
    for pid in mine:
        try:
            if os.stat(f"/proc/{pid}").st_uid >= HOST_UID_BASE:
                pids.append(pid)
        except OSError:
            continue
    return pids


def _memory(pids: list[int]) -> tuple[int, int]:
    rss = pss = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Rss:"):
                        rss += int(line.split()[1]) * 1024
                    elif line.startswith("Pss:"):
                        pss += int(line.split()[1]) * 1024
        except OSError:
            continue
    return rss, pss


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--resets", type=int, default=5)
    parser.add_argument("--envs", default="1,2,4", help="comma-separated env counts for the vector rows")
    args = parser.parse_args()
    wall = time.perf_counter()
    single = bench_floor_and_single(args.steps, args.resets)
    floor_ms = single["grab_ms"] + single["click_ms"]
    overhead_ms = single["step_ms"] - single["settle_ms"]
    rows = [
        ("raw floor: MIT-SHM grab (in sandbox)", f"{single['grab_ms']:.2f} ms", "", ""),
        ("raw floor: XTest click (in sandbox)", f"{single['click_ms']:.2f} ms", "", ""),
        ("raw floor: grab + click", f"{floor_ms:.2f} ms", "1.00x", ""),
        (
            "frame to host as RGB array (Xvfb screen file)",
            f"{single['frame_ms']:.2f} ms",
            f"{single['frame_ms'] / floor_ms:.2f}x",
            "",
        ),
        (
            "env.step no-op GUI, total (median)",
            f"{single['step_ms']:.1f} ms",
            f"{single['step_ms'] / floor_ms:.1f}x",
            f"p95 {single['step_p95_ms']:.1f} ms",
        ),
        (
            "  of which settle wait (screen + CPU still)",
            f"{single['settle_ms']:.1f} ms",
            "",
            "ends after 50 ms without change",
        ),
        (
            "  step overhead = total - settle",
            f"{overhead_ms:.1f} ms",
            f"{overhead_ms / floor_ms:.1f}x",
            "target <= 2x floor + settle",
        ),
        (
            "reset to first obs, calc task (median)",
            f"{single['reset_ms']:.0f} ms",
            "",
            f"p95 {single['reset_p95_ms']:.0f} ms; target <= 1500 ms",
        ),
        (
            "memory per env, Calc open (RSS / PSS)",
            f"{single['rss_mb']:.0f} / {single['pss_mb']:.0f} MB",
            "",
            "target <= 700 MB",
        ),
    ]
    base = None
    for n in [int(x) for x in args.envs.split(",") if x]:
        result = bench_vector(n, args.steps, enable_mcp=False)
        base = base or result["steps_per_s"] / n
        rows.append(
            (
                f"AsyncVectorEnv, {n} env(s): no-op steps/s",
                f"{result['steps_per_s']:.1f}",
                f"{result['steps_per_s'] / base:.2f}x",
                f"RSS/PSS per env {result['rss_mb']:.0f}/{result['pss_mb']:.0f} MB",
            )
        )
    mcp = bench_vector(1, 3, enable_mcp=True)
    rows.append(
        (
            "1 env with the MCP tool host: memory",
            f"{mcp['rss_mb']:.0f} / {mcp['pss_mb']:.0f} MB",
            "",
            "RSS / PSS",
        )
    )
    print(
        f"# bench_env: {os.cpu_count()} CPUs, python {sys.version.split()[0]}, "
        f"{args.steps} steps, {args.resets} resets"
    )
    print("| measure | value | vs floor / 1 env | note |")
    print("|---|---:|---:|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    print(f"wall {time.perf_counter() - wall:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
