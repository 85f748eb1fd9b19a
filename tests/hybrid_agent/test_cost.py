"""USD per step, episode, task and run from recorded token counts, checked against hand-computed numbers."""

import json
from concurrent.futures import ThreadPoolExecutor

import pytest
from hybrid_agent.cost import Budget, Price, PriceTable, model_name, run_spend, step_spend
from hybrid_agent.errors import ConfigError
from hybrid_agent.recorder import EpisodeWriter, check_run_config, plan_resume, write_suite
from hybrid_agent.report import write_report
from hybrid_agent.report.summary import summarize_run

# input 2.00, cached 0.50, output 8.00 USD per million tokens.
PRICES = {"models": {"test-model": {"input": 2.0, "cached_input": 0.5, "output": 8.0}}}


def price_file(tmp_path):
    path = tmp_path / "prices.json"
    path.write_text(json.dumps(PRICES))
    return path


def episode(run_dir, task, run, tokens, error=None, pool=None):
    with ThreadPoolExecutor(1) as own:
        writer = EpisodeWriter(
            run_dir, task, run, {"task_id": task, "domain": "calc", "run": run}, pool or own
        )
        for i, t in enumerate(tokens):
            writer.step({"step": i, "tokens": t, "parse": {"ok": False, "code": "no_tool_call"}}, None)
        writer.finish({"score": None if error else 1.0, "error": error, "wall_s": 1.0})


def priced_run(tmp_path, policy="openai:http://127.0.0.1:1/v1#test-model"):
    run_dir = tmp_path / "run"
    check_run_config(run_dir, {"policy": policy, "agent": {"context": "win4"}, "runs": 2})
    write_suite(run_dir, [("a", "calc"), ("b", "calc")], 2)
    # a/run0: (1000-200)*2 + 200*0.5 + 50*8 = 1600 + 100 + 400 = 2100 -> 0.0021 USD
    episode(run_dir, "a", 0, [{"input": 1000, "cached": 200, "output": 50}])
    # a/run1: 2000*2 + 100*8 = 4800 -> 0.0048; plus 3000*2 + 0 = 6000 -> 0.006: 0.0108 USD
    episode(run_dir, "a", 1, [{"input": 2000, "output": 100}, {"input": 3000, "cached": None, "output": 0}])
    # b/run0: 500*2 + 10*8 = 1080 -> 0.00108 USD
    episode(run_dir, "b", 0, [{"input": 500, "cached": 0, "output": 10}])
    # b/run1: a policy error, its failed call has no counts -> 0 USD known, 1 uncounted step
    episode(
        run_dir, "b", 1, [{"input": None, "output": None}], error={"type": "policy_error", "message": "503"}
    )
    return run_dir


def test_a_step_costs_uncached_cached_and_output_tokens_at_their_prices():
    price = Price(2.0, 0.5, 8.0)
    assert step_spend({"input": 1000, "cached": 200, "output": 50}, price).usd == pytest.approx(0.0021)
    assert step_spend({"input": 1000, "output": 50}, price).usd == pytest.approx(
        0.0024
    )  # no cache: full price
    unknown = step_spend({"input": None, "output": 3}, price)
    assert (unknown.usd, unknown.uncounted) == (0.0, 1)


def test_episode_task_and_run_costs_equal_the_hand_computed_sums(tmp_path):
    run_dir = priced_run(tmp_path)
    cost = summarize_run(run_dir, PriceTable.bundled().with_file(price_file(tmp_path))).cost
    assert cost is not None and cost.model == "test-model"
    assert cost.per_task == pytest.approx({"a": (0.0021 + 0.0108) / 2, "b": 0.00108 / 2})
    assert cost.per_episode == pytest.approx((0.0021 + 0.0108 + 0.00108) / 4)
    # run 0: a + b = 0.00318; run 1: 0.0108 + 0 = 0.0108; mean 0.00699
    assert cost.per_run == pytest.approx(0.00699)
    assert cost.total == pytest.approx(0.01398) and cost.uncounted == 1


def test_table2_prices_the_model_and_shows_na_without_a_price(tmp_path):
    run_dir = priced_run(tmp_path)
    unpriced = tmp_path / "unpriced"
    check_run_config(unpriced, {"policy": "scripted:tools", "agent": {"context": "win4"}, "runs": 1})
    episode(unpriced, "a", 0, [{"input": 1000, "output": 50, "estimated": True}])
    report = write_report(
        [run_dir, unpriced], tmp_path / "out", PriceTable.bundled().with_file(price_file(tmp_path))
    )
    lines = report.table2.splitlines()
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    priced_row = dict(zip(header, [c.strip() for c in lines[2].strip("|").split("|")], strict=True))
    unpriced_row = dict(zip(header, [c.strip() for c in lines[3].strip("|").split("|")], strict=True))
    # One uncounted step makes every sum a lower bound.
    assert priced_row["USD/episode"] == "≥0.0035" and priced_row["USD/run"] == "≥0.0070"
    assert priced_row["USD total"] == "≥0.0140"
    assert unpriced_row["USD/episode"] == unpriced_row["USD total"] == "n/a"
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["runs"][0]["cost_usd"]["total"] == pytest.approx(0.01398)
    assert summary["runs"][1]["cost_usd"] is None


def test_errored_tries_set_aside_for_a_rerun_count_in_the_total(tmp_path):
    run_dir = priced_run(tmp_path)
    plan_resume(run_dir, [("b", 1)], max_tries=3)  # moves b/run1 under errored/
    episode(run_dir, "b", 1, [{"input": 1000, "output": 0}])  # the rerun: 0.002 USD
    price = Price(2.0, 0.5, 8.0)
    assert run_spend(run_dir, price).usd == pytest.approx(0.01398 + 0.002)


def test_a_user_price_file_overrides_and_adds_and_a_bad_one_says_what_is_missing(tmp_path):
    table = PriceTable.bundled().with_file(price_file(tmp_path))
    assert table.lookup("test-model") == Price(2.0, 0.5, 8.0) and table.lookup("TEST-MODEL") is not None
    assert table.lookup("gpt-4o") is not None and table.lookup("no-such-model") is None
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"models": {"m": {"input": 1.0, "output": 2.0}}}))
    with pytest.raises(ConfigError, match="'m' lacks a number for cached_input"):
        PriceTable.load(bad)


def test_model_names_come_from_the_policy_spec():
    assert model_name("openai:http://host:8000/v1#gpt-4o") == "gpt-4o"
    assert model_name("hf:/ckpt/Qwen3-VL-8B/") == "Qwen3-VL-8B"
    assert model_name("scripted") == "scripted"


def test_a_budget_needs_a_price_for_the_model():
    with pytest.raises(ConfigError, match="needs a price for model 'mystery'"):
        Budget.for_policy(1.0, "openai:http://h/v1#mystery", PriceTable.bundled())
    with pytest.raises(ConfigError, match="must be > 0"):
        Budget.for_policy(0.0, "openai:http://h/v1#gpt-4o", PriceTable.bundled())
