"""``check_python_file_by_test_suite``: the task's test suite run against the agent's files.

OSWorld imports the suite (``cloud_file``, from the file cache) into its evaluating
process with the suite's folder, its ``cache_dir``, as working directory and first on
``sys.path``, and scores its ``test()`` (or ``options["test_function_name"]``): a bool
as 1/0, a number clamped to [0, 1], anything else by its truth; a suite that fails to
load, lacks the function or raises scores 0. The ``vm_file`` getter had copied *all* of
the agent's files it names into that folder, though with ``multi`` it hands the metric
only those ``gives`` picks (the first one by default): the suites of 26150609 and 9219480b
get ``food.py`` or ``block.py`` and import the three other files from the folder. So
here the suite's folder (the run's ``work_dir``, this package's ``cache_dir``) is copied
in whole, the files handed over on top, and the suite runs in
:mod:`osworld_mcp_env.evaluators.confined_python`'s sandbox, never in the host process.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from osworld_mcp_env.evaluators.confined_python import run_test_suite
from osworld_mcp_env.evaluators.registry import ZeroScore, register_metric


def _fetched_beside(suite: Path) -> list[Path]:
    """The other plain files of the suite's folder: what the task's getters fetched there."""
    return sorted(p for p in suite.parent.iterdir() if p != suite and p.is_file() and not p.is_symlink())


@register_metric("check_python_file_by_test_suite", options=("test_function_name",))
def check_python_file_by_test_suite(result: Any, expected: Any, **options: Any) -> float:
    """The suite's score; 0 with the reason when it could not run or ran past its limits."""
    if not expected:
        return 0.0  # OSWorld: "test_file is None or empty"
    suite = Path(expected)
    if not suite.is_file():
        return 0.0
    files = result if isinstance(result, list) else [result]
    handed = [Path(p) for p in files if p and Path(p).is_file()]
    # The handed files come last: where a name is in both, theirs is the copy the suite sees.
    outcome = run_test_suite(
        suite, [*_fetched_beside(suite), *handed], function=str(options.get("test_function_name", "test"))
    )
    if outcome.reason:  # only a suite that gave no score of its own has one
        raise ZeroScore(f"check_python_file_by_test_suite: {outcome.reason}")
    return outcome.score
