"""Runs a task's Python test suite inside the confined runner and reports OSWorld's score.

Run by :mod:`osworld_mcp_env.evaluators.confined_python` as ``python3 -I
test_suite_child.py SUITE FUNCTION`` in a sandbox whose working directory holds the suite
beside the agent's files. It does what OSWorld's ``check_python_file_by_test_suite``
does in its own process: put the suite's folder first on ``sys.path`` (so the suite
imports the agent's modules), load the suite under a fresh module name, call its test
function and turn the return value into a score. The score goes out as one JSON line on
the descriptor that was standard output when the child started; the suite's own prints
go to standard error.

Standard library only: it runs under the system interpreter, not the package's env.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import uuid
from typing import Any


def score_of(value: Any) -> float:
    """OSWorld's reading of the test function's return value.

    ``bool`` gives 1 or 0; a number is clamped with ``max(0.0, min(1.0, x))`` (so NaN,
    which no comparison holds for, comes out 1.0 there, as in OSWorld); anything else
    counts by its truth.
    """
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, (int, float)):
        return max(0.0, min(1.0, float(value)))
    return 1.0 if value else 0.0


def run_suite(suite: str, function: str) -> tuple[float, str]:
    """Loads ``suite`` and calls ``function``: (score, reason; "" when the function ran)."""
    folder = os.path.dirname(os.path.abspath(suite))
    os.chdir(folder)
    sys.path.insert(0, folder)
    name = f"dynamic_test_module_{uuid.uuid4().hex[:8]}"
    try:
        spec = importlib.util.spec_from_file_location(name, suite)
        if spec is None or spec.loader is None:
            return 0.0, f"cannot load {os.path.basename(suite)} as a module"
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    except BaseException as exc:  # SystemExit too: the suite and the agent's code are untrusted
        return 0.0, f"loading the test suite raised {type(exc).__name__}: {exc}"
    test = getattr(module, function, None)
    if test is None or not callable(test):
        return 0.0, f"the test suite has no callable {function!r}"
    try:
        return score_of(test()), ""  # OSWorld reads the value inside the same ``try``
    except BaseException as exc:
        return 0.0, f"{function}() raised {type(exc).__name__}: {exc}"


def main() -> int:
    """Runs the suite named on the command line and writes its JSON line."""
    suite, function = sys.argv[1], sys.argv[2]
    report = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # the suite's prints must not mix with the report
    score, reason = run_suite(suite, function)
    report.write(json.dumps({"score": score, "reason": reason}) + "\n")
    report.flush()
    os._exit(0)  # no atexit handler or thread of the agent's code runs after the report


if __name__ == "__main__":
    sys.exit(main())
