"""The semantic channel's size and speed: raw accessibility tree vs ``ax.observe``'s compact view.

For each task, resets ``OSWorldMCP-v0`` with ``ax_tools=True``, reads the raw tree the
observation's ``a11y_tree`` field carries (the whole desktop, OSWorld's XML), then calls
``ax.observe`` N times through the env's tool catalog (the MCP path, no screenshot) and
prints characters, tokens (characters / 4) and the call's latency (median, p90).

    uv run python tools/bench_ax.py [-n 10] [--tasks calc-sum-column writer-replace-word ...]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from typing import Any

import gymnasium as gym

DEFAULT_TASKS = ("calc-sum-column", "writer-replace-word", "impress-set-title", "os-create-file")


def measure(env: gym.Env, task: str, calls: int) -> dict[str, Any]:
    """Raw and compact sizes of the focused window's app and the observe latency of one task."""
    env.reset(options={"task": task})
    episode: Any = env.unwrapped._episode  # type: ignore[attr-defined]
    raw = episode.desktop.accessibility_tree()
    latencies, view = [], ""
    for _ in range(calls):
        result = episode.tools.call("ax.observe", {}, timeout_s=30.0)
        if not result.exec_ok:
            raise RuntimeError(f"{task}: {result.text}")
        latencies.append(result.latency_ms)
        view = result.text
    latencies.sort()
    return {
        "raw_chars": len(raw),
        "compact_chars": len(view),
        "median_ms": statistics.median(latencies),
        "p90_ms": latencies[int(0.9 * (len(latencies) - 1))],
        "first": view.splitlines()[1] if len(view.splitlines()) > 1 else view,
    }


def main(argv: list[str] | None = None) -> int:
    """Prints one row per task."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=10, help="ax.observe calls per task")
    parser.add_argument("--tasks", nargs="+", default=list(DEFAULT_TASKS))
    args = parser.parse_args(argv)
    env = gym.make("osworld_mcp_env:OSWorldMCP-v0", ax_tools=True)
    try:
        print(
            "| task | raw chars | raw tokens | compact chars | compact tokens | ratio | median ms | p90 ms |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        for task in args.tasks:
            m = measure(env, task, args.n)
            print(
                f"| {task} | {m['raw_chars']:,} | {m['raw_chars'] // 4:,} | {m['compact_chars']:,} | "
                f"{m['compact_chars'] // 4:,} | {m['raw_chars'] / max(1, m['compact_chars']):.1f}x | "
                f"{m['median_ms']:.0f} | {m['p90_ms']:.0f} |",
                flush=True,
            )
            print(f"  window: {m['first'][:100]}", file=sys.stderr)
    finally:
        env.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
