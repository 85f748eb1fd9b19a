"""Benchmark of the embedded desktop and the env, in one run on one machine.

Prints one table: the raw floor (an MIT-SHM grab plus one XTest click, inside a
sandbox, no env), ``env.step`` for a no-op GUI action (with its settle wait shown
apart), for a click on a Calc cell and for typing 10 characters, ``reset`` to
the first observation of the calc task, steps/s with 1, 2 and 4 envs
(``AsyncVectorEnv``), and memory per env. Ratios are against the floor measured
in the same run. Targets (issue #2): step overhead <= 2x the floor plus
settle time, reset <= 1.5 s, <= 0.7 GB per env; issue #12: no-op step <= 15 ms,
click step <= 30 ms, type-10 step <= 40 ms. The load average is printed with
the table: on a shared machine every number depends on it.

    uv run python tools/bench_env.py [--steps 30] [--resets 5] [--envs 1,2,4]

With ``--peer cua`` it prints instead our env against trycua's cua-computer-server
(issue #12), both on a 1920x1080 Calc desktop, measured in turns in one run:
screenshot to an RGB array, click then screenshot with no waiting, a click step and
a type-10 step to the observation, and how often the frame after typing differs
from one taken 0.3 s later. The peer runs in its own venv and Xvfb
(``tools/bench_peer_cua.py``); its processes are killed at exit, Ctrl-C or error.

    uv run python tools/bench_env.py --peer cua [--iterations 100] [--runs 3]

With ``--prepared-reset`` it prints instead ``reset`` of the calc task cold against
prepared (``OSWorldMCPEnv.prepare_reset`` at the episode's start, ``--steps`` no-op
steps, then ``reset``), in turns in one run, with the no-op step's latency while a
preparation runs beside the episode (its CPU cost) and a reset right after
``prepare_reset`` (the env discards a preparation that would finish later than a
cold reset, and goes cold).

    uv run python tools/bench_env.py --prepared-reset [--resets 5] [--steps 30]

With ``--cold-resets`` it prints instead only cold resets of the given tasks, each split into
the desktop calls it makes and the guest's reset phases (``tools/bench_reset.py``).

    uv run python tools/bench_env.py --cold-resets calc-sum-column,os-create-file [--resets 5]

With ``--backend libvirt`` it prints instead the libvirt backend against the local one
(``tools/bench_libvirt.py``): image build, boot, reset by snapshot and by overlay, step
latency and host memory per VM.

    uv run python tools/bench_env.py --backend libvirt [--steps 20] [--resets 5] [--cold]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import signal
import statistics
import sys
import time
from typing import Any, cast

import gymnasium as gym
import numpy as np

# tools/ is on sys.path when this file runs as a script
from bench_common import (
    CLICK_XY,
    CLICKS,
    ENV_ID,
    NOOP,
    load_average,
    median_ms,
    p95_ms,
    print_table,
    process_memory,
    timed_step,
)
from bench_libvirt import run as run_libvirt
from bench_peer_cua import CUA_VERSION, CuaPeer
from bench_reset import guest_reset_phases
from bench_reset import run as run_cold_resets
from osworld_mcp_env.backends.local.cgroups import DEFAULT_CPU_WEIGHT
from osworld_mcp_env.backends.local.desktop import LocalDesktop
from osworld_mcp_env.env.config import PREPARING_CPU_WEIGHT
from osworld_mcp_env.env.core import OSWorldMCPEnv

TYPE10 = {"name": "computer_use", "arguments": {"action": "type", "text": "abcdefghij"}}
ESCAPE = {"name": "computer_use", "arguments": {"action": "key", "keys": ["Escape"]}}
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
PEER_STALE_AFTER_S = 0.3  # the frame after typing is compared with one taken this much later


def run_floor(desktop, steps: int) -> dict[str, float]:
    """The raw floor measured inside the sandbox; its JSON comes back through a file, not stdout."""
    script = [desktop.config.guest_python, "-c", FLOOR_SCRIPT.format(n=steps), FLOOR_RESULT]
    result = desktop.execute(script)
    data = desktop.read_file(FLOOR_RESULT)
    if not result.ok or data is None:
        raise RuntimeError(f"The floor script failed ({result.returncode}): {result.error[-2000:]}")
    return json.loads(data)


def bench_floor_and_single(steps: int, resets: int) -> dict[str, float]:
    # Every phase below steps the same episode: no step limit may end it part-way.
    env = gym.make(ENV_ID, task="calc-sum-column", enable_mcp=False, max_steps=1_000_000)
    try:
        env.reset()  # first start builds the LibreOffice profile template once per host
        desktop = cast(OSWorldMCPEnv, env.unwrapped).desktop
        if not isinstance(desktop, LocalDesktop):
            raise TypeError(f"bench_env measures the local backend, not {type(desktop).__name__}.")
        floor = run_floor(desktop, steps)
        phases = guest_reset_phases(desktop, resets)  # the env's resets below restore the task
        reset_s, desktop_s, setup_s = [], [], []
        for _ in range(resets):
            start = time.perf_counter()
            _obs, info = env.reset()
            reset_s.append(time.perf_counter() - start)
            desktop_s.append(info["timings"]["desktop_ms"] / 1000)
            setup_s.append(info["timings"]["setup_ms"] / 1000)
        step_s, settle_s, observe_s = [], [], []
        for _ in range(steps):
            seconds, info = timed_step(env, NOOP)
            step_s.append(seconds)
            settle_s.append(info["timings"].get("settle_ms", 0.0) / 1000)
            observe_s.append(info["timings"]["observe_ms"] / 1000)
        click_s, click_settle_s = [], []
        for i in range(steps):
            seconds, info = timed_step(env, CLICKS[i % 2])
            click_s.append(seconds)
            click_settle_s.append(info["timings"].get("settle_ms", 0.0) / 1000)
        type_s, type_settle_s = [], []
        for _ in range(steps):
            seconds, info = timed_step(env, TYPE10)
            type_s.append(seconds)
            type_settle_s.append(info["timings"].get("settle_ms", 0.0) / 1000)
            timed_step(env, ESCAPE)  # leave the cell's edit mode: the next type starts afresh
        frame_s = []
        for _ in range(steps):
            start = time.perf_counter()
            desktop.screenshot()
            frame_s.append(time.perf_counter() - start)
        rss, pss = process_memory(desktop.processes())
        return {
            **floor,
            "frame_ms": median_ms(frame_s),
            "step_ms": median_ms(step_s),
            "step_p95_ms": p95_ms(step_s),
            "settle_ms": median_ms(settle_s),
            "observe_ms": median_ms(observe_s),
            "click_step_ms": median_ms(click_s),
            "click_step_p95_ms": p95_ms(click_s),
            "click_settle_ms": median_ms(click_settle_s),
            "type_step_ms": median_ms(type_s),
            "type_step_p95_ms": p95_ms(type_s),
            "type_settle_ms": median_ms(type_settle_s),
            "reset_ms": median_ms(reset_s),
            "reset_p95_ms": p95_ms(reset_s),
            "reset_desktop_ms": median_ms(desktop_s),
            "reset_setup_ms": median_ms(setup_s),
            **{f"reset_guest_{name}_ms": ms for name, ms in phases.items()},
            "rss_mb": rss / 2**20,
            "pss_mb": pss / 2**20,
        }
    finally:
        env.close()


def bench_writer_typing(chars: int) -> float:
    """Seconds of one ``type`` step of ``chars`` characters at the end of a Writer document."""
    words = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "12", "345")
    text = " ".join(words[i % len(words)] for i in range(chars))[:chars]

    def gui(**arguments: object) -> float:
        return timed_step(env, {"name": "computer_use", "arguments": arguments})[0]

    env = gym.make(ENV_ID, task="writer-replace-word", enable_mcp=False, step_timeout_s=600.0)
    try:
        env.reset()
        gui(action="left_click", coordinate=[960, 540])
        gui(action="key", keys=["ctrl", "End"])
        return gui(action="type", text=text)
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
        rss, pss = process_memory(_sandbox_pids())
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
    from osworld_mcp_env.backends.local.userns import HOST_UID_BASE

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


def bench_ours_for_peer(env: gym.Env, desktop: LocalDesktop, iterations: int) -> dict[str, float]:
    """One run of our side of the peer table, the same operations the peer client times."""
    frame_s, click_s = [], []
    for _ in range(iterations):
        start = time.perf_counter()
        desktop.screenshot()
        frame_s.append(time.perf_counter() - start)
    for i in range(iterations):
        start = time.perf_counter()
        _click_without_settle(desktop, CLICK_XY[i % 2])
        desktop.screenshot()
        click_s.append(time.perf_counter() - start)
    step_s, settle_s = [], []
    for i in range(iterations):
        seconds, info = timed_step(env, CLICKS[i % 2])
        step_s.append(seconds)
        settle_s.append(info["timings"].get("settle_ms", 0.0) / 1000)
    type_s, type_settle_s, typing_s = [], [], []
    stale = 0
    for _ in range(iterations):
        start = time.perf_counter()
        obs, _reward, _terminated, _truncated, info = env.step(TYPE10)
        type_s.append(time.perf_counter() - start)
        if "error" in info:
            raise RuntimeError(f"The benchmark's step {TYPE10} failed: {info['error']}")
        timings = info["timings"]
        type_settle_s.append(timings.get("settle_ms", 0.0) / 1000)
        typing_s.append((timings["action_ms"] - timings.get("settle_ms", 0.0)) / 1000)
        time.sleep(PEER_STALE_AFTER_S)
        stale += int(not np.array_equal(obs["screenshot"], desktop.screenshot().pixels))
        timed_step(env, ESCAPE)
    return {
        "frame_ms": median_ms(frame_s),
        "click_ms": median_ms(click_s),
        "click_step_ms": median_ms(step_s),
        "click_settle_ms": median_ms(settle_s),
        "type_ms": median_ms(type_s),
        "type_settle_ms": median_ms(type_settle_s),
        "typing_ms": median_ms(typing_s),
        "stale": stale,
    }


def _click_without_settle(desktop: LocalDesktop, coordinate: list[int]) -> None:
    """A left click through the guest's ``/gui`` with its settle wait off: input only, as cua's click."""
    body = {"action": "left_click", "arguments": {"coordinate": coordinate}, "settle": False}
    status, _, data = desktop.client.request("POST", "/gui", json_body=body)
    if status != 200:
        raise RuntimeError(f"The guest refused a click ({status}): {data[:500]!r}")


def bench_peer(peer_name: str, iterations: int, runs: int) -> list[tuple[str, str, str, str]]:
    """Ours and the peer's medians over ``runs`` runs, taking turns so that load hits both alike."""
    if peer_name != "cua":
        raise ValueError(f"Unknown peer {peer_name!r}; known: cua")
    ours: list[dict[str, float]] = []
    theirs: list[dict[str, Any]] = []
    with CuaPeer() as peer:
        env = gym.make(ENV_ID, task="calc-sum-column", enable_mcp=False, max_steps=1_000_000)
        try:
            env.reset()
            desktop = cast(OSWorldMCPEnv, env.unwrapped).desktop
            if not isinstance(desktop, LocalDesktop):
                raise TypeError(f"bench_env measures the local backend, not {type(desktop).__name__}.")
            if desktop.screen_size != (1920, 1080):
                raise RuntimeError(f"Our desktop is {desktop.screen_size}, the peer's 1920x1080.")
            for run in range(runs):
                if run % 2:
                    theirs.append(peer.measure(iterations))
                    ours.append(bench_ours_for_peer(env, desktop, iterations))
                else:
                    ours.append(bench_ours_for_peer(env, desktop, iterations))
                    theirs.append(peer.measure(iterations))
        finally:
            env.close()
    if (theirs[0]["width"], theirs[0]["height"]) != (1920, 1080):
        raise RuntimeError(f"The peer's screenshots are {theirs[0]['width']}x{theirs[0]['height']}.")

    def med(results: list[dict[str, Any]], key: str) -> float:
        return statistics.median(r[key] for r in results)

    def row(label: str, key: str, cua_note: str = "", our_note: str = "") -> tuple[str, str, str, str]:
        cua, our = med(theirs, key), med(ours, key)
        return (label, f"{cua:.1f} ms{cua_note}", f"{our:.1f} ms{our_note}", f"{cua / our:.2f}x")

    total = iterations * runs
    return [
        row("screenshot to an RGB array", "frame_ms", " (PNG + base64 + decode)"),
        row("click, then screenshot, no waiting", "click_ms"),
        (
            "one env step: click -> observation",
            f"{med(theirs, 'click_ms'):.1f} ms (click + screenshot; no wait)",
            f"{med(ours, 'click_step_ms'):.1f} ms (settle {med(ours, 'click_settle_ms'):.1f} ms)",
            f"{med(theirs, 'click_ms') / med(ours, 'click_step_ms'):.2f}x",
        ),
        row(
            "one env step: type 10 characters -> observation",
            "type_ms",
            f" (typing alone {med(theirs, 'typing_ms'):.1f} ms)",
            f" (typing {med(ours, 'typing_ms'):.1f} ms, settle {med(ours, 'type_settle_ms'):.1f} ms)",
        ),
        (
            f"frame after typing stale (differs {PEER_STALE_AFTER_S} s later)",
            f"{sum(r['stale'] for r in theirs)} / {total}",
            f"{sum(r['stale'] for r in ours)} / {total}",
            "",
        ),
    ]


def bench_prepared_reset(resets: int, steps: int) -> list[tuple[str, str, str, str]]:
    """Cold and prepared resets of the calc task in turns; rows of (measure, cold, prepared, ratio)."""
    env = gym.make(ENV_ID, task="calc-sum-column", prepare_resets=True, max_steps=1_000_000)
    unwrapped = cast(OSWorldMCPEnv, env.unwrapped)
    preparer = unwrapped.preparer
    assert preparer is not None

    def reset(expected: str | None) -> tuple[float, str]:
        start = time.perf_counter()
        _obs, info = env.reset()
        seconds = time.perf_counter() - start
        path = "prepared" if "prepared_ms" in info["timings"] else "cold"
        if expected not in (None, path):
            raise RuntimeError(f"The reset did not take the {expected} path: {info['timings']}")
        return seconds, path

    try:
        env.reset()  # first start builds the LibreOffice profile template once per host
        cold, prepared, late, quiet_steps, prepare_s = [], [], [], [], []
        busy_steps: dict[int, list[float]] = {PREPARING_CPU_WEIGHT: [], DEFAULT_CPU_WEIGHT: []}
        late_paths: list[str] = []
        memory: list[tuple[int, int]] = []
        for round_ in range(resets):
            cold.append(reset("cold")[0])
            quiet_steps += [timed_step(env, NOOP)[0] for _ in range(steps)]
            # Rounds alternate the preparing desktop's CPU weight: the env's and the episode's own.
            weight = (PREPARING_CPU_WEIGHT, DEFAULT_CPU_WEIGHT)[round_ % 2]
            unwrapped.config = dataclasses.replace(unwrapped.config, preparing_cpu_weight=weight)
            started = time.perf_counter()
            unwrapped.prepare_reset("calc-sum-column")
            busy_steps[weight] += [timed_step(env, NOOP)[0] for _ in range(steps)]
            ready = preparer.ready(timeout_s=300)
            if ready is None:
                raise RuntimeError("The preparation failed; run the env tests.")
            prepare_s.append(time.perf_counter() - started)
            memory.append(process_memory(cast(LocalDesktop, ready.desktop).processes()))
            prepared.append(reset("prepared")[0])
            unwrapped.prepare_reset("calc-sum-column")
            seconds, path = reset(None)
            late.append(seconds)
            late_paths.append(path)
    finally:
        env.close()
    ratio = statistics.median(cold) / statistics.median(prepared)
    return [
        (
            "reset to first obs, calc task (median)",
            f"{median_ms(cold):.0f} ms",
            f"{median_ms(prepared):.0f} ms",
            f"{ratio:.1f}x",
        ),
        ("reset, p95", f"{p95_ms(cold):.0f} ms", f"{p95_ms(prepared):.0f} ms", ""),
        (
            "reset right after prepare_reset",
            "",
            f"{median_ms(late):.0f} ms",
            f"{statistics.median(cold) / statistics.median(late):.2f}x; "
            f"{late_paths.count('cold')} of {len(late_paths)} went cold",
        ),
        ("preparation, start to ready, beside the episode", "", f"{median_ms(prepare_s):.0f} ms", ""),
        (
            "memory of the prepared desktop, Calc open (RSS / PSS)",
            "",
            f"{max(r for r, _ in memory) / 2**20:.0f} / {max(p for _, p in memory) / 2**20:.0f} MB",
            "the largest of the runs; MCP host included",
        ),
        (
            f"no-op step median (p95), episode alone / beside a preparation at weight {PREPARING_CPU_WEIGHT}",
            median_p95(quiet_steps),
            median_p95(busy_steps[PREPARING_CPU_WEIGHT]),
            "",
        ),
        (
            f"no-op step beside a preparation at weight {DEFAULT_CPU_WEIGHT} (the episode's)",
            "",
            median_p95(busy_steps[DEFAULT_CPU_WEIGHT]),
            "",
        ),
    ]


def median_p95(seconds: list[float]) -> str:
    return f"{median_ms(seconds):.1f} ({p95_ms(seconds):.1f}) ms"


def _exit_on_signal(signum: int, _frame: object) -> None:
    """SIGTERM and SIGHUP end the run like Ctrl-C does: through every ``finally``, peer included."""
    raise SystemExit(128 + signum)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--resets", type=int, default=5)
    parser.add_argument("--envs", default="1,2,4", help="comma-separated env counts for the vector rows")
    parser.add_argument("--writer-chars", type=int, default=4000, help="typed into Writer (0: skip)")
    parser.add_argument("--peer", choices=["cua"], help="print ours against this peer instead (issue #12)")
    parser.add_argument("--iterations", type=int, default=100, help="per operation and run, with --peer")
    parser.add_argument("--runs", type=int, default=3, help="runs with --peer; the table shows their median")
    parser.add_argument("--prepared-reset", action="store_true", help="print cold against prepared resets")
    parser.add_argument("--backend", choices=["local", "libvirt"], default="local")
    parser.add_argument("--cold", action="store_true", help="with --backend libvirt: build the image anew")
    parser.add_argument(
        "--cold-resets",
        metavar="TASKS",
        help="comma-separated task ids: print only their cold resets, each split by desktop call",
    )
    args = parser.parse_args()
    if args.cold_resets:
        run_cold_resets([t for t in args.cold_resets.split(",") if t], args.resets)
        return 0
    if args.backend == "libvirt":
        run_libvirt(args.steps, args.resets, overlay_resets=1, cold=args.cold)
        return 0
    wall = time.perf_counter()
    if args.prepared_reset:
        print(f"# bench_env --prepared-reset: load average at the start {load_average()}", flush=True)
        prepared_rows = bench_prepared_reset(args.resets, args.steps)
        print(f"# {os.cpu_count()} CPUs, {args.resets} resets of each kind in turns, {args.steps} steps each")
        print_table(["measure", "cold", "prepared", "cold / prepared"], prepared_rows)
        print(f"wall {time.perf_counter() - wall:.0f} s, load average at the end {load_average()}")
        return 0
    if args.peer:
        for signum in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, _exit_on_signal)
        print(f"# bench_env --peer {args.peer}: load average at the start {load_average()}", flush=True)
        peer_rows = bench_peer(args.peer, args.iterations, args.runs)
        print(
            f"# {os.cpu_count()} CPUs, python {sys.version.split()[0]}, 1920x1080 Calc on both sides, "
            f"{args.iterations} iterations x {args.runs} runs (median of run medians), "
            f"cua-computer-server {CUA_VERSION}"
        )
        print(f"| operation | {args.peer} | ours | {args.peer} / ours |")
        print("|---|---:|---:|---:|")
        for peer_row in peer_rows:
            print("| " + " | ".join(peer_row) + " |")
        print(f"wall {time.perf_counter() - wall:.0f} s, load average at the end {load_average()}")
        return 0
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
            "  of which settle wait (damage, CPU, timers)",
            f"{single['settle_ms']:.1f} ms",
            "",
            "12 ms still after the last damage, CPU use or announced timer",
        ),
        (
            "  step overhead = total - settle",
            f"{overhead_ms:.1f} ms",
            f"{overhead_ms / floor_ms:.1f}x",
            "target <= 2x floor + settle",
        ),
        (
            "env.step click a Calc cell (median)",
            f"{single['click_step_ms']:.1f} ms",
            "",
            f"p95 {single['click_step_p95_ms']:.1f} ms; settle {single['click_settle_ms']:.1f} ms",
        ),
        (
            "env.step type 10 chars into a cell (median)",
            f"{single['type_step_ms']:.1f} ms",
            "",
            f"p95 {single['type_step_p95_ms']:.1f} ms; settle {single['type_settle_ms']:.1f} ms",
        ),
        (
            "reset to first obs, calc task (median)",
            f"{single['reset_ms']:.0f} ms",
            "",
            f"p95 {single['reset_p95_ms']:.0f} ms; target <= 1500 ms",
        ),
        (
            "of which the desktop's reset / the task's setup",
            f"{single['reset_desktop_ms']:.0f} / {single['reset_setup_ms']:.0f} ms",
            "",
            "setup: open the file, office ready, settle; guest's reset: "
            + ", ".join(
                f"{key[len('reset_guest_') : -len('_ms')]} {value:.0f}"
                for key, value in single.items()
                if key.startswith("reset_guest_")
            )
            + " ms",
        ),
        (
            "memory per env, Calc open (RSS / PSS)",
            f"{single['rss_mb']:.0f} / {single['pss_mb']:.0f} MB",
            "",
            "target <= 700 MB",
        ),
    ]
    if args.writer_chars:
        seconds = bench_writer_typing(args.writer_chars)
        rows.append(
            (
                f"env.step type {args.writer_chars} chars into Writer",
                f"{seconds:.1f} s",
                "",
                f"{seconds / args.writer_chars * 1000:.1f} ms a character, until the document holds them",
            )
        )
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
        f"{args.steps} steps, {args.resets} resets, load average {load_average()}"
    )
    print_table(["measure", "value", "vs floor / 1 env", "note"], rows, text_columns=(0, 3))
    print(f"wall {time.perf_counter() - wall:.0f} s, load average at the end {load_average()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
