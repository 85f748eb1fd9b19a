"""The main job: run the bundled tasks on the embedded desktop with a scripted policy and print scores.

Each bundled task ships a scripted solution (GUI actions only) and a scripted
wrong solution; the oracle must score 1 and the wrong one 0 on the real
desktop, through the real evaluator. ``--route tools`` solves the calc task
through MCP tool calls instead of the GUI.

    uv run python examples/run_bundled_tasks.py [--variant oracle|wrong] [--route gui|tools]
"""

from __future__ import annotations

import argparse
import time

import gymnasium as gym
import osworld_mcp_env  # noqa: F401 - registers OSWorldMCP-v0
from osworld_mcp_env.tasks.bundled import BUNDLED_TASK_IDS, bundled_solution

# The calc task through the tool route: two MCP calls instead of ten GUI actions.
CALC_TOOL_ROUTE = [
    {"name": "libreoffice_calc.set_cell_value", "arguments": {"cell": "B1", "value": "=SUM(A1:A5)"}},
    {"name": "libreoffice_calc.save", "arguments": {}},
    {"name": "computer_use", "arguments": {"action": "terminate", "status": "success"}},
]


def scripted_actions(task_id: str, variant: str, route: str) -> list[dict]:
    if route == "tools" and task_id == "calc-sum-column" and variant == "oracle":
        return CALC_TOOL_ROUTE
    return bundled_solution(task_id, variant)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", choices=["oracle", "wrong"], default="oracle")
    parser.add_argument("--route", choices=["gui", "tools"], default="gui")
    parser.add_argument("--tasks", nargs="*", default=list(BUNDLED_TASK_IDS))
    args = parser.parse_args()
    env = gym.make("osworld_mcp_env:OSWorldMCP-v0", max_steps=50)
    rows = []
    try:
        for task_id in args.tasks:
            started = time.perf_counter()
            _obs, info = env.reset(options={"task": task_id})
            reset_s = time.perf_counter() - started
            steps, score, errors, note = 0, 0.0, 0, ""
            for action in scripted_actions(task_id, args.variant, args.route):
                _obs, score, terminated, truncated, info = env.step(action)
                steps += 1
                errors += "error" in info
                if terminated or truncated:
                    note = info.get("eval_error", {}).get("message", "")
                    break
            rows.append((task_id, steps, errors, score, reset_s, time.perf_counter() - started, note))
    finally:
        env.close()
    print(
        f"| task | steps | action errors | score | reset s | episode s | note |  "
        f"({args.variant}, {args.route})"
    )
    print("|---|---:|---:|---:|---:|---:|---|")
    for task_id, steps, errors, score, reset_s, total_s, note in rows:
        print(f"| {task_id} | {steps} | {errors} | {score:.2f} | {reset_s:.2f} | {total_s:.2f} | {note} |")
    print(f"mean score {sum(r[3] for r in rows) / len(rows):.3f} over {len(rows)} tasks")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
