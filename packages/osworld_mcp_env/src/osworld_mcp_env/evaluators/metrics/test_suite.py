"""``check_python_file_by_test_suite``: the task's test suite run against the agent's files.

OSWorld imports the suite (``cloud_file``, from the file cache) into its evaluating
process, after the ``vm_file`` getter copied the agent's files beside it, and scores its
``test()`` (or ``options["test_function_name"]``): a bool as 1/0, a number clamped to
[0, 1], anything else by its truth; a suite that fails to load, lacks the function or
raises scores 0. Here the same happens in :mod:`osworld_mcp_env.evaluators.confined_python`'s
sandbox, never in the host process. Only the agent's files named by the getter and the
suite are copied in; OSWorld's suite runs in its cache folder, which for the two tasks
that use this metric holds exactly those files.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from osworld_mcp_env.evaluators.confined_python import run_test_suite
from osworld_mcp_env.evaluators.registry import ZeroScore, register_metric


@register_metric("check_python_file_by_test_suite", options=("test_function_name",))
def check_python_file_by_test_suite(result: Any, expected: Any, **options: Any) -> float:
    """The suite's score; 0 with the reason when it could not run or ran past its limits."""
    if not expected:
        return 0.0  # OSWorld: "test_file is None or empty"
    suite = Path(expected)
    if not suite.is_file():
        return 0.0
    files = result if isinstance(result, list) else [result]
    modules = [Path(p) for p in files if p and Path(p).is_file()]
    outcome = run_test_suite(suite, modules, function=str(options.get("test_function_name", "test")))
    if outcome.reason:  # only a suite that gave no score of its own has one
        raise ZeroScore(f"check_python_file_by_test_suite: {outcome.reason}")
    return outcome.score
