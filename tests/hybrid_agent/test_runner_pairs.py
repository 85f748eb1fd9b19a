"""Runner.evaluate(tasks, pairs): a replay runs the (task, run) pairs it names, nothing else."""

from __future__ import annotations

import pytest
from hybrid_agent.errors import ConfigError
from hybrid_agent.policies import make_policy
from hybrid_agent.runner import RunConfig, Runner
from hybrid_agent.suite import load_suite


@pytest.mark.parametrize("pair", [("calc-sum-column", 0), ("os-create-file", 2), ("os-create-file", -1)])
def test_a_pair_outside_the_suite_or_its_runs_is_refused_before_any_env_starts(tmp_path, pair):
    runner = Runner(RunConfig(policy="scripted", runs=2), make_policy("scripted"), tmp_path, progress=False)
    runner.env_factory = lambda: pytest.fail("no env may start")
    with pytest.raises(ConfigError, match="outside"):
        runner.evaluate(load_suite("os-create-file"), [pair])


def test_no_pairs_left_to_run_starts_no_env(tmp_path):
    runner = Runner(RunConfig(policy="scripted", runs=2), make_policy("scripted"), tmp_path, progress=False)
    runner.env_factory = lambda: pytest.fail("no env may start")
    result = runner.evaluate(load_suite("os-create-file"), [])
    assert (result.finished, result.skipped) == (0, 0)
