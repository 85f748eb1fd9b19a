"""The main job: the scripted policy on the bundled suite, 2 desktops in parallel; prints Tables 2 and 3.

Same as ``hybrid-agent eval --suite bundled --policy scripted:tools --runs 2 --envs 2 --out runs/bundled``:
calc through MCP tools, writer and os through the GUI, every episode recorded
(JSONL + PNG) and resumable. Extra arguments are passed on (``--policy scripted:wrong``,
``--context win2+drop``, ``--out DIR`` ...).

    uv run python examples/run_bundled_tasks.py
"""

from __future__ import annotations

import sys

from hybrid_agent.cli import main

DEFAULTS = [
    "--suite",
    "bundled",
    "--policy",
    "scripted:tools",
    "--runs",
    "2",
    "--envs",
    "2",
    "--out",
    "runs/bundled",
]

if __name__ == "__main__":
    raise SystemExit(main(["eval", *DEFAULTS, *sys.argv[1:]]))
