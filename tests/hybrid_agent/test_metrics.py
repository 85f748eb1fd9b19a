"""Metrics on a fixed set of episodes against hand-computed numbers (arithmetic in the comments)."""

import math

import pytest
from hybrid_agent import metrics
from hybrid_agent.metrics import EpisodeStats, Estimate, StepKind, StepStats


def step(kind, exec_ok=True, tokens=0, shown=True):
    return StepStats(StepKind(kind), exec_ok, tokens, 10, shown)


EPISODES = [
    # run 0
    EpisodeStats(
        "t1", "calc", 0, 1.0, (step("mcp", tokens=100), step("gui", tokens=200)), claimed_success=True
    ),
    EpisodeStats(
        "t2",
        "writer",
        0,
        0.0,
        (step("gui", tokens=100), step("hallucinated", False, 100), step("gui", tokens=100)),
        claimed_success=True,
    ),
    # run 1
    EpisodeStats(
        "t1", "calc", 1, 1.0, (step("gui", tokens=50), step("gui", tokens=50)), claimed_success=True
    ),
    EpisodeStats("t2", "writer", 1, None, (step("gui", tokens=10),), error="env_error"),
]


def test_accuracy_is_the_mean_of_run_means_with_their_standard_error():
    acc = metrics.accuracy(EPISODES)
    # run 0: (1 + 0) / 2 = 0.5; run 1: 1.0 (the errored episode is left out); mean 0.75
    # SE = stdev([0.5, 1.0]) / sqrt(2) = 0.35355 / 1.41421 = 0.25
    assert acc.mean == pytest.approx(0.75) and acc.se == pytest.approx(0.25) and acc.runs == 2
    by_domain = metrics.accuracy_by_domain(EPISODES)
    assert by_domain["calc"] == Estimate(1.0, 0.0, 2)
    assert by_domain["writer"] == Estimate(0.0, 0.0, 1)
    assert metrics.accuracy([]) is None


def test_significance_needs_more_than_two_standard_errors():
    a = Estimate(0.75, 0.25, 2)
    # 2 * sqrt(0.25**2 + 0.1**2) = 0.5385
    assert metrics.significant(a, Estimate(0.20, 0.1, 2))  # |delta| 0.55
    assert not metrics.significant(a, Estimate(0.30, 0.1, 2))  # |delta| 0.45


def test_behavioural_metrics():
    # scored episodes: A (mcp ok, gui), B (gui, hallucinated, gui), C (gui, gui)
    assert metrics.adoption(EPISODES) == pytest.approx(1 / 3)
    assert metrics.tir_real(EPISODES) == pytest.approx((1 / 2 + 0 + 0) / 3)
    assert metrics.tir_any(EPISODES) == pytest.approx((1 / 2 + 1 / 3 + 0) / 3)
    # right decision and success: A only (C succeeded without a tool on a tool-reachable task)
    assert metrics.osworld_mcp_tir(EPISODES) == pytest.approx(1 / 3)
    assert metrics.osworld_mcp_tir(
        EPISODES, tool_beneficial=lambda ep: ep.task_id == "t1" and ep.run == 0
    ) == (pytest.approx(2 / 3))
    assert metrics.acs(EPISODES) == 2  # A and C, two steps each
    assert metrics.false_success_rate(EPISODES) == pytest.approx(1 / 3)  # B claimed success, scored 0
    assert metrics.hallucinated_tool_rate(EPISODES) == pytest.approx(1 / 8)  # 8 decodable calls, D's too
    assert metrics.malformed_rate(EPISODES) == 0
    assert metrics.hit_cap_rate(EPISODES) == 0


def test_adoption_over_tool_reachable_episodes_only():
    unreachable = EpisodeStats("t3", "os", 0, 1.0, (step("gui", shown=False),))
    episodes = [*EPISODES, unreachable]
    assert metrics.adoption(episodes) == pytest.approx(1 / 4)
    assert metrics.adoption(episodes, reachable_only=True) == pytest.approx(1 / 3)


def test_tokens_per_task_peak_and_per_accuracy_point():
    summary = metrics.token_summary(EPISODES)
    # totals 300, 300, 100, 10 -> 177.5; peaks 200, 100, 50, 10 -> p95 = 200 - 0.15 * (200 - 100) = 185
    assert summary.input_per_task == pytest.approx(177.5)
    assert summary.peak_p95 == pytest.approx(185.0)
    assert summary.output_per_task == pytest.approx((20 + 30 + 20 + 10) / 4)
    per_point = metrics.tokens_per_accuracy_point(summary.input_per_task, metrics.accuracy(EPISODES))
    assert per_point == pytest.approx(177.5 / 75)
    assert metrics.tokens_per_accuracy_point(100.0, Estimate(0.0, 0.0, 1)) is None
    assert math.isclose(summary.peak_max, 200)
