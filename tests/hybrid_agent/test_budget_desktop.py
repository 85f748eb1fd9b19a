"""`--budget-usd` on the real desktop: the run stops cleanly at the budget and a resume continues."""

import json
import sys
from pathlib import Path

import pytest
from hybrid_agent.cli import main
from hybrid_agent.cost import Price, steps_spend
from hybrid_agent.recorder import EPISODES, iter_episodes, read_stop
from osworld_mcp_env.tasks import BUNDLED_DIR

sys.path.insert(0, str(Path(__file__).parents[1] / "osworld_mcp_env"))
from desktop_support import desktop_missing

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.slow,
    pytest.mark.skipif(
        desktop_missing() is not None, reason=f"embedded desktop unavailable: {desktop_missing()}"
    ),
]
# The scripted policy's (estimated) counts priced as a model: 2 USD in, 0.5 cached, 8 out per million.
PRICE = Price(2.0, 0.5, 8.0)


def test_the_budget_stops_the_run_between_episodes_and_a_larger_one_continues(tmp_path, capsys):
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "os-create-file.json").write_bytes((BUNDLED_DIR / "os-create-file.json").read_bytes())
    prices = tmp_path / "prices.json"
    prices.write_text(
        json.dumps({"models": {"scripted": {"input": 2.0, "cached_input": 0.5, "output": 8.0}}})
    )
    out = tmp_path / "out"
    command = ["eval", "--suite", str(suite), "--policy", "scripted", "--runs", "3", "--out", str(out)]
    command += ["--prices", str(prices), "--no-screenshots"]

    # A budget below one step's cost: the first episode is in flight when it is reached, so it
    # finishes and is recorded; the two others never start.
    assert main([*command, "--budget-usd", "0.000001"]) == 3
    printed = capsys.readouterr()
    assert "budget reached" in printed.err and "2 episodes not run" in printed.err
    assert "stopped early (budget:" in printed.out  # the report's headline
    [first] = list(iter_episodes(out))
    assert first.end["score"] == 1.0 and not list((out / EPISODES).glob("*.partial"))
    spent = steps_spend(first.steps, PRICE).usd
    by_hand = sum((s["tokens"]["input"] * 2.0 + s["tokens"]["output"] * 8.0) / 1e6 for s in first.steps)
    assert spent == pytest.approx(by_hand) and spent > 0.000001
    stop = read_stop(out)
    assert stop is not None and stop["reason"] == "budget" and stop["not_run"] == 2
    assert stop["spent_usd"] == pytest.approx(spent) and stop["model"] == "scripted"
    table2 = (out / "table2.md").read_text()
    assert f"~{spent / 1:.4f}" in table2  # the run's spend, estimated counts marked

    # The same budget again: already spent, nothing starts, nothing is lost.
    assert main([*command, "--budget-usd", "0.000001"]) == 3
    assert len(list(iter_episodes(out))) == 1 and read_stop(out)["not_run"] == 2

    # A larger budget continues where the run stopped.
    assert main([*command, "--budget-usd", "100"]) == 0
    records = list(iter_episodes(out))
    assert sorted(r.run for r in records) == [0, 1, 2] and all(r.end["score"] == 1.0 for r in records)
    assert read_stop(out) is None
