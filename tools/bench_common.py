"""What the env benchmarks share: the env id and actions they time, statistics, memory, the table.

``bench_env.py`` and ``bench_libvirt.py`` (and ``bench_scaleout.py``) import these
from here rather than from each other, so that neither depends on the other's
command line and no import cycle runs through ``tools/``. Scripts in ``tools/`` find
this module because Python puts a script's own directory on ``sys.path``.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Sequence
from typing import Any

import gymnasium as gym

ENV_ID = "osworld_mcp_env:OSWorldMCP-v0"
NOOP = {"name": "computer_use", "arguments": {"action": "mouse_move", "coordinate": [960, 540]}}
# Two Calc cells clicked in turn: every click moves the cell cursor and repaints.
CLICK_XY = ([300, 300], [420, 340])
CLICKS = [
    {"name": "computer_use", "arguments": {"action": "left_click", "coordinate": xy}} for xy in CLICK_XY
]


def median_ms(samples: Sequence[float]) -> float:
    """The median of ``samples`` (seconds), in milliseconds."""
    return statistics.median(samples) * 1000


def p95_ms(samples: Sequence[float]) -> float:
    """The 95th percentile of ``samples`` (seconds, the nearest rank), in milliseconds."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))] * 1000


def timed_step(env: gym.Env, action: dict[str, Any]) -> tuple[float, dict[str, Any]]:
    """One step's wall time and info; a step the env refused would time an error, so it raises."""
    start = time.perf_counter()
    _obs, _reward, _terminated, _truncated, info = env.step(action)
    seconds = time.perf_counter() - start
    if "error" in info:
        raise RuntimeError(f"The benchmark's step {action} failed: {info['error']}")
    return seconds, info


def load_average() -> str:
    """The 1, 5 and 15 minute load averages, as ``uptime`` prints them: every number depends on them."""
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def process_memory(pids: Sequence[int]) -> tuple[int, int]:
    """(RSS, PSS) in bytes summed over ``pids``; processes gone meanwhile count nothing."""
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


def print_table(
    header: Sequence[str], rows: Sequence[Sequence[str]], text_columns: Sequence[int] = (0,)
) -> None:
    """A Markdown table; columns not in ``text_columns`` are numbers, aligned right."""
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" if i in text_columns else "---:" for i in range(len(header))) + "|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
