"""Cold resets of given tasks, with where each one's time goes.

For each task: one env, a first reset (it starts the desktop and, once per host, builds
the LibreOffice profile), then ``--resets`` timed cold resets. Each reset is split into
the desktop calls it makes (the desktop's own reset, the task's setup calls such as
``open_file`` or ``execute``, the settle wait, the first frame), timed around the
desktop object, and the guest's fast reset into its phases (``/session/reset``'s
``phases_ms``, measured by as many direct calls). Prints one table per task with
medians, and the load average: on a shared machine every number depends on it.

    uv run python tools/bench_env.py --cold-resets calc-sum-column,os-create-file [--resets 5]
    uv run python tools/bench_reset.py calc-sum-column os-create-file [--resets 5]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, cast

import gymnasium as gym
from bench_common import ENV_ID, load_average, median_ms, p95_ms, print_table  # tools/ is on sys.path
from osworld_mcp_env.backends.local.desktop import LocalDesktop
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


@contextmanager
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


def bench_task(task: str, resets: int) -> list[tuple[str, str, str]]:
    """Rows (what, median, note) of ``resets`` cold resets of ``task``."""
    env = gym.make(ENV_ID, task=task, enable_mcp=False, max_steps=1_000_000)
    try:
        env.reset()  # starts the desktop (and builds the LibreOffice profile once per host)
        desktop = cast(OSWorldMCPEnv, env.unwrapped).desktop
        if not isinstance(desktop, LocalDesktop):
            raise TypeError(f"bench_reset measures the local backend, not {type(desktop).__name__}.")
        phases = guest_reset_phases(desktop, resets)
        totals: list[float] = []
        per_call: dict[str, list[float]] = {}
        for _ in range(resets):
            with traced(desktop, TRACED_CALLS) as spans:
                started = time.perf_counter()
                env.reset()
                totals.append(time.perf_counter() - started)
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
    rows.append(
        (
            "  of restart: the guest's phases",
            f"{sum(phases.values()):.0f} ms",
            ", ".join(f"{name} {ms:.0f}" for name, ms in phases.items()),
        )
    )
    return rows


def run(tasks: Sequence[str], resets: int) -> None:
    """Measures each task's cold resets and prints the table."""
    wall = time.perf_counter()
    print(f"# bench_reset: load average at the start {load_average()}", flush=True)
    rows = [row for task in tasks for row in bench_task(task, resets)]
    print(f"# {os.cpu_count()} CPUs, python {sys.version.split()[0]}, {resets} cold resets per task (median)")
    print_table(["measure", "median", "note"], rows, text_columns=(0, 2))
    print(f"wall {time.perf_counter() - wall:.0f} s, load average at the end {load_average()}")


def main(argv: list[str] | None = None) -> int:
    """CLI entry point; ``tools/bench_env.py --cold-resets`` calls :func:`run` the same way."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tasks", nargs="+", help="task ids, e.g. calc-sum-column os-create-file")
    parser.add_argument("--resets", type=int, default=5)
    args = parser.parse_args(argv)
    run(args.tasks, args.resets)
    return 0


if __name__ == "__main__":
    sys.exit(main())
