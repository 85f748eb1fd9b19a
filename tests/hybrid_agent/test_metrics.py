"""Metrics on a fixed set of episodes against hand-computed numbers (arithmetic in the comments)."""

import math
from pathlib import Path

import pytest
from hybrid_agent import metrics
from hybrid_agent.metrics import EpisodeStats, Estimate, Reachability, StepKind, StepStats, Unscored
from hybrid_agent.recorder import EpisodeRecord


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


def test_false_success_over_all_scored_episodes_and_over_claims():
    capped = EpisodeStats("t3", "os", 0, 0.0, (step("gui"),), truncated=True)  # no terminate: not a claim
    gave_up = EpisodeStats("t4", "os", 0, 0.0, (step("gui"),), claimed_success=False)
    episodes = [*EPISODES, capped, gave_up]
    # one false success (B) among 5 scored episodes (A, B, C, capped, gave_up); the errored D is not scored
    assert metrics.false_success_all(episodes) == pytest.approx(1 / 5)
    # over the 4 voluntary terminations (A, B, C, gave_up)
    assert metrics.false_success_rate(episodes) == pytest.approx(1 / 4)
    assert metrics.false_success_all([]) is None


def test_hallucinated_names_are_counted_in_every_episode():
    errored = EpisodeStats("t9", "os", 1, None, (step("hallucinated", False),) * 2, error="env_error")
    assert metrics.hallucinated_tool_calls(EPISODES) == 1  # B's one call
    assert metrics.hallucinated_tool_calls([*EPISODES, errored]) == 3


def annotated(task_id, annotation, shown, used):
    steps = (step("mcp" if used else "gui", shown=shown),)
    return EpisodeStats(task_id, "calc", 0, 1.0, steps, annotated_reachable=annotation)


def test_a_task_annotation_defines_reachability_and_disagreements_are_counted():
    episodes = [
        annotated("a", True, True, True),  # agree
        annotated("b", True, False, False),  # annotated reachable, no tool shown
        annotated("c", False, True, False),  # annotated not reachable, tools shown
        annotated("d", False, False, False),  # agree
    ]
    # by annotation: a, b reachable, a used a tool -> 1/2; by shown tools: a, c, a used one -> 1/2
    assert metrics.adoption(episodes, reachable_only=True) == pytest.approx(1 / 2)
    assert metrics.adoption(episodes, reachable_only=True, by=Reachability.SHOWN) == pytest.approx(1 / 2)
    # a and c alone tell the two apart: by annotation a only -> 1; by shown tools a, c -> 1/2
    assert metrics.adoption([episodes[0], episodes[2]], reachable_only=True) == 1.0
    assert metrics.adoption([episodes[0], episodes[2]], reachable_only=True, by=Reachability.SHOWN) == 0.5
    assert metrics.reachability_disagreements(episodes) == 2
    assert metrics.reachability_source(episodes) == "annotation"
    # OSWorld-MCP TIR by annotation: a (tool, beneficial), c and d (no tool, not beneficial) -> 3/4
    assert metrics.osworld_mcp_tir(episodes) == pytest.approx(3 / 4)


def test_reachability_falls_back_to_the_shown_tools_where_a_task_has_no_annotation():
    bare = annotated("e", None, True, False)
    assert bare.tool_reachable and metrics.reachability_disagreements([bare]) == 0
    assert metrics.reachability_source([bare]) == "shown"
    mixed = [annotated("a", False, True, True), bare, annotated("f", None, False, False)]
    assert metrics.reachability_source(mixed) == "annotation for 1 of 3 episodes, else shown"
    # reachable: e (shown) only, a is annotated unreachable although a tool was shown and used
    assert metrics.adoption(mixed, reachable_only=True) == 0.0
    assert metrics.adoption(mixed, reachable_only=True, by=Reachability.SHOWN) == 0.5


def record(steps, end, **header):
    return EpisodeRecord({"task_id": "t", "run": 0, "domain": "calc", **header}, steps, end, Path("t.jsonl"))


def parsed(ok, code=None, name="computer_use"):
    parse = {"ok": True, "call": {"name": name, "arguments": {}}} if ok else {"ok": False, "code": code}
    return {"parse": parse, "shown_tools": ["calc.save"], "tokens": {"input": 10, "output": 5}}


def test_cut_off_replies_and_unfinished_reasoning_are_malformed_steps():
    steps = [
        parsed(True),
        parsed(False, "truncated"),
        parsed(False, "unfinished_reasoning"),
        parsed(False, "unknown_tool"),
        {"tokens": {"input": 10}},  # a policy error: no reply to parse, not a step
    ]
    ep = metrics.episode_stats(record(steps, {"score": 0.0, "claimed_success": None}))
    assert [s.kind for s in ep.steps] == ["gui", "malformed", "malformed", "hallucinated"]
    assert metrics.malformed_rate([ep]) == pytest.approx(2 / 4)
    assert metrics.hallucinated_tool_rate([ep]) == pytest.approx(1 / 2)  # the two decodable calls


def test_episode_stats_reads_the_annotation_and_the_error_code():
    end = {"score": None, "error": {"type": "policy_error", "code": "context_length", "message": "too long"}}
    ep = metrics.episode_stats(record([], end, tool_reachable=False))
    assert ep.annotated_reachable is False and ep.error_label == "policy_error:context_length"
    plain = metrics.episode_stats(record([], {"score": 1.0, "error": None}, tool_reachable="yes"))
    assert plain.annotated_reachable is None and plain.error_label is None  # not a bool: no annotation


def scored(task_id, run, domain="calc", error=None):
    return EpisodeStats(task_id, domain, run, None if error else 1.0, error=error)


def test_coverage_counts_every_task_and_pair_of_the_suite():
    suite = [(t, r) for r in range(2) for t in ("a", "b", "c", "d")]
    episodes = [
        scored("a", 0),
        scored("a", 1),
        scored("b", 0),
        scored("b", 1, error="env_error"),  # b still has a scored run
        scored("c", 0, error="eval_error"),
        scored("c", 1, error="policy_error"),
        # d: never run
    ]
    cover = metrics.coverage(episodes, suite)
    assert (cover.tasks, cover.scored_tasks, cover.episodes, cover.scored_episodes) == (4, 2, 8, 3)
    assert cover.unscored == (
        Unscored("c", ("eval_error", "policy_error"), 0),
        Unscored("d", (), 2),
    )
    # without a suite only what was recorded is seen: d disappears
    old = metrics.coverage(episodes)
    assert (old.tasks, old.scored_tasks, old.episodes, old.scored_episodes) == (3, 2, 6, 3)


def test_a_record_outside_the_suite_still_counts():
    cover = metrics.coverage([scored("a", 0), scored("z", 0, error="env_error")], [("a", 0)])
    assert (cover.tasks, cover.episodes, cover.scored_episodes) == (2, 2, 1)
    assert cover.unscored == (Unscored("z", ("env_error",), 0),)


def test_coverage_by_domain_takes_unrun_tasks_domains_from_the_suite():
    episodes = [scored("a", 0), scored("b", 0, "writer", error="env_error")]
    by_domain = metrics.coverage_by_domain(
        episodes, [("a", 0), ("b", 0), ("c", 0)], {"a": "calc", "b": "writer", "c": "os"}
    )
    assert list(by_domain) == ["calc", "os", "writer"]
    assert (by_domain["calc"].scored_tasks, by_domain["calc"].tasks) == (1, 1)
    assert by_domain["os"].unscored == (Unscored("c", (), 1),)
    assert by_domain["writer"].unscored == (Unscored("b", ("env_error",), 0),)
