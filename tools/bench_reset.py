"""Cold resets of given tasks, with where each one's time goes.

For each task: one env, a first reset (it starts the desktop and, once per host, builds
the LibreOffice profile), then ``--resets`` timed cold resets. Each reset is split into
the desktop calls it makes (the desktop's own reset, the task's setup calls such as
``open_file`` or ``execute``, the settle wait, the first frame), timed around the
desktop object, and the guest's fast reset into its phases (``/session/reset``'s
``phases_ms``, measured by as many direct calls). Prints one table per task with
medians, and the load average: on a shared machine every number depends on it.

With ``--watch-screen``, a thread beside each reset reads Xvfb's screen file every 20 ms
(about a third of a core, which the reset's own numbers then pay) and notes when its
pixels change, until ``AFTER_S`` after the reset returned: the last change before the
reset's end says how long the screen took to become final (the rest of the reset is the
settle wait's safety margin), and a change after it would be a stale first frame.

    uv run python tools/bench_env.py --cold-resets calc-sum-column,os-create-file [--resets 5]
    uv run python tools/bench_reset.py calc-sum-column os-create-file [--resets 5] [--watch-screen]
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, cast

import gymnasium as gym
import numpy as np
from bench_common import ENV_ID, load_average, median_ms, p95_ms, print_table  # tools/ is on sys.path
from osworld_mcp_env.backends.local.desktop import LocalDesktop
from osworld_mcp_env.backends.local.framebuffer import open_framebuffer
from osworld_mcp_env.env.core import OSWorldMCPEnv

# The desktop calls a reset makes (Desktop protocol names), each timed on its own.
TRACED_CALLS = (
    "restart",
    "upload_file",
    "open_file",
    "execute",
    "launch",
    "activate_window",
    "close_window",
    "settle",
    "screenshot",
)

AFTER_S = 2.0  # how long after a reset's end the screen is still watched for changes
WATCH_INTERVAL_S = 0.02


@contextlib.contextmanager
def screen_changes(desktop: LocalDesktop) -> Iterator[list[float]]:
    """``time.perf_counter()`` of every change of the screen's pixels while the block runs."""
    framebuffer = open_framebuffer(desktop.fb_dir, desktop.uids.infra)
    if framebuffer is None:
        raise RuntimeError("The screen file cannot be read; bench_reset needs the local backend's.")
    changes: list[float] = []
    done = threading.Event()

    def watch() -> None:
        previous = framebuffer.rgb()
        while not done.wait(WATCH_INTERVAL_S):
            current = framebuffer.rgb()
            if current is None or previous is None or current.shape != previous.shape:
                previous = current  # the screen file was replaced (a new sandbox): no frame to compare
            elif not np.array_equal(current, previous):
                changes.append(time.perf_counter())
                previous = current

    watcher = threading.Thread(target=watch, name="screen-watch", daemon=True)
    watcher.start()
    try:
        yield changes
    finally:
        done.set()
        watcher.join()
        framebuffer.close()


@contextlib.contextmanager
def traced(desktop: object, names: Sequence[str]) -> Iterator[list[tuple[str, float]]]:
    """Records (name, seconds) of every call of ``names`` on ``desktop`` while the block runs.

    The methods are wrapped on the instance only and put back after the block.
    """
    spans: list[tuple[str, float]] = []

    def timed(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(method)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                spans.append((name, time.perf_counter() - started))

        return wrapper

    wrapped = [name for name in names if callable(getattr(desktop, name, None))]
    for name in wrapped:
        setattr(desktop, name, timed(name, getattr(desktop, name)))
    try:
        yield spans
    finally:
        for name in wrapped:
            delattr(desktop, name)  # the class's method shows through again


def guest_reset_phases(desktop: LocalDesktop, resets: int) -> dict[str, float]:
    """Median milliseconds of each phase of the guest's fast reset (``/session/reset``'s ``phases_ms``)."""
    runs: list[dict[str, float]] = []
    for _ in range(resets):
        status, _headers, data = desktop.client.request("POST", "/session/reset", json_body={}, timeout=15)
        if status != 200:
            raise RuntimeError(f"/session/reset answered {status}: {data[-300:]!r}")
        runs.append(json.loads(data)["phases_ms"])
    return {name: statistics.median(run[name] for run in runs) for name in runs[0]}


def bench_task(task: str, resets: int, *, watch_screen: bool) -> list[tuple[str, str, str]]:
    """Rows (what, median, note) of ``resets`` cold resets of ``task``."""
    env = gym.make(ENV_ID, task=task, enable_mcp=False, max_steps=1_000_000)
    try:
        env.reset()  # starts the desktop (and builds the LibreOffice profile once per host)
        desktop = cast(OSWorldMCPEnv, env.unwrapped).desktop
        if not isinstance(desktop, LocalDesktop):
            raise TypeError(f"bench_reset measures the local backend, not {type(desktop).__name__}.")
        phases = guest_reset_phases(desktop, resets)
        totals: list[float] = []
        final: list[float] = []  # the last screen change before the reset returned, from its start
        stale = 0  # resets whose screen changed after they returned
        per_call: dict[str, list[float]] = {}
        for _ in range(resets):
            with contextlib.ExitStack() as stack:
                changes = stack.enter_context(screen_changes(desktop)) if watch_screen else []
                spans = stack.enter_context(traced(desktop, TRACED_CALLS))
                started = time.perf_counter()
                env.reset()
                ended = time.perf_counter()
                if watch_screen:
                    time.sleep(AFTER_S)
            totals.append(ended - started)
            final.append(max([t for t in changes if t <= ended], default=started) - started)
            stale += any(t > ended for t in changes)
            summed: dict[str, float] = {}
            for name, seconds in spans:
                summed[name] = summed.get(name, 0.0) + seconds
            for name, seconds in summed.items():
                per_call.setdefault(name, []).append(seconds)
    finally:
        env.close()
    rows = [(f"{task}: reset to first obs", f"{median_ms(totals):.0f} ms", f"p95 {p95_ms(totals):.0f} ms")]
    for name in TRACED_CALLS:
        if name in per_call:
            samples = per_call[name]
            note = "" if len(samples) == len(totals) else f"in {len(samples)} of {len(totals)} resets"
            rows.append((f"  desktop.{name}", f"{median_ms(samples):.0f} ms", note))
    if watch_screen:
        rows.append(
            (
                "  the screen's last change, from the reset's start",
                f"{median_ms(final):.0f} ms",
                f"changed within {AFTER_S:g} s after the reset returned: {stale} of {len(totals)} resets",
            )
        )
    rows.append(
        (
            "  of restart: the guest's phases",
            f"{sum(phases.values()):.0f} ms",
            ", ".join(f"{name} {ms:.0f}" for name, ms in phases.items())
            + " (direct resets back to back: only the first has the task's apps to kill)",
        )
    )
    return rows


def run(tasks: Sequence[str], resets: int, *, watch_screen: bool = False) -> None:
    """Measures each task's cold resets and prints the table."""
    wall = time.perf_counter()
    print(f"# bench_reset: load average at the start {load_average()}", flush=True)
    rows = [row for task in tasks for row in bench_task(task, resets, watch_screen=watch_screen)]
    print(f"# {os.cpu_count()} CPUs, python {sys.version.split()[0]}, {resets} cold resets per task (median)")
    print_table(["measure", "median", "note"], rows, text_columns=(0, 2))
    print(f"wall {time.perf_counter() - wall:.0f} s, load average at the end {load_average()}")


def main(argv: list[str] | None = None) -> int:
    """CLI entry point; ``tools/bench_env.py --cold-resets`` calls :func:`run` the same way."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tasks", nargs="+", help="task ids, e.g. calc-sum-column os-create-file")
    parser.add_argument("--resets", type=int, default=5)
    parser.add_argument("--watch-screen", action="store_true", help="time the screen's changes too")
    args = parser.parse_args(argv)
    run(args.tasks, args.resets, watch_screen=args.watch_screen)
    return 0


if __name__ == "__main__":
    sys.exit(main())
