"""Resume planning (which pairs rerun, errored tries set aside) and the suite record, on real run dirs."""

import json
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from hybrid_agent.errors import ConfigError
from hybrid_agent.recorder import (
    EPISODES,
    EpisodeWriter,
    iter_archived_tries,
    iter_episodes,
    plan_resume,
    read_suite,
    worth_retrying,
    write_suite,
)


def record(run_dir, task_id, run=0, error=None, score=None, frame=True):
    with ThreadPoolExecutor(1) as pool:
        header = {"task_id": task_id, "domain": "calc", "run": run}
        writer = EpisodeWriter(run_dir, task_id, run, header, pool)
        writer.step({"step": 0, "model_output": "x"}, np.zeros((4, 4, 3), np.uint8) if frame else None)
        writer.finish({"score": score if error is None else None, "error": error})


ENV = {"type": "env_error", "message": "desktop died"}


@pytest.mark.parametrize(
    ("error", "retry"),
    [
        (None, False),
        ({"type": "policy_error", "message": "HTTP 503"}, True),
        ({"type": "policy_error", "code": "transport", "message": "reset by peer"}, True),
        ({"type": "policy_error", "code": "auth", "message": "401"}, True),
        ({"type": "policy_error", "code": "context_length", "message": "too long"}, False),
        ({"type": "reset_error", "message": "x"}, True),
        ({"type": "env_error", "message": "x"}, True),
        ({"type": "desktop_error", "message": "x"}, True),
        ({"type": "eval_error", "message": "checker crashed"}, False),
        ({"type": "something_new", "message": "x"}, False),
    ],
)
def test_only_errors_a_rerun_can_cure_are_retried(error, retry):
    assert worth_retrying(error) is retry


def test_a_resume_runs_missing_and_curable_pairs_and_keeps_the_rest(tmp_path):
    record(tmp_path, "scored", score=1.0)
    record(tmp_path, "env", error=ENV)
    record(tmp_path, "eval", error={"type": "eval_error", "message": "no file"})
    record(tmp_path, "long", error={"type": "policy_error", "code": "context_length", "message": "x"})
    (tmp_path / EPISODES / "killed__run0.jsonl.partial").write_text('{"type": "episode"}\n')
    todo = [(t, 0) for t in ("scored", "env", "eval", "long", "killed", "never")]
    plan = plan_resume(tmp_path, todo, max_tries=3)
    assert plan.pending == (("env", 0), ("killed", 0), ("never", 0))
    assert plan.retrying == (("env", 0),)
    assert (plan.kept, plan.exhausted, plan.discarded_partials) == (3, (), 1)
    # the errored try moved aside with its frames, so the new try gets the normal name
    assert sorted(r.task_id for r in iter_episodes(tmp_path)) == ["eval", "long", "scored"]
    (archived,) = iter_archived_tries(tmp_path)
    assert (archived.record.task_id, archived.attempt) == ("env", 1)
    assert archived.record.end["error"] == ENV
    assert (archived.frames / "step_000.png").is_file()
    assert not (tmp_path / EPISODES / "env__run0").exists()


def test_an_errored_pair_is_tried_max_tries_times_in_all(tmp_path):
    todo = [("env", 0)]
    record(tmp_path, "env", error=ENV)
    for _ in range(2):  # tries 1 and 2 errored: each is set aside and the pair reruns
        assert plan_resume(tmp_path, todo, max_tries=3).retrying == (("env", 0),)
        record(tmp_path, "env", error=ENV)
    plan = plan_resume(tmp_path, todo, max_tries=3)  # try 3 errored too: it stands
    assert (plan.pending, plan.exhausted, plan.kept) == ((), (("env", 0),), 1)
    assert [a.attempt for a in iter_archived_tries(tmp_path)] == [1, 2]
    assert [r.end["error"]["type"] for r in iter_episodes(tmp_path)] == ["env_error"]


def test_max_tries_one_never_reruns(tmp_path):
    record(tmp_path, "env", error=ENV)
    assert plan_resume(tmp_path, [("env", 0)], max_tries=1).exhausted == (("env", 0),)
    with pytest.raises(ConfigError, match="max_tries must be >= 1"):
        plan_resume(tmp_path, [("env", 0)], max_tries=0)


def test_a_kill_between_moving_the_frames_and_the_record_counts_the_try_once(tmp_path):
    record(tmp_path, "env", error=ENV)
    errored = tmp_path / EPISODES / "errored"
    errored.mkdir()
    # the frames went, the record did not
    (tmp_path / EPISODES / "env__run0").rename(errored / "env__run0.try1")
    plan = plan_resume(tmp_path, [("env", 0)], max_tries=2)
    assert plan.retrying == (("env", 0),)
    (archived,) = iter_archived_tries(tmp_path)
    assert archived.attempt == 1 and (archived.frames / "step_000.png").is_file()


def test_a_record_without_frames_is_set_aside_too(tmp_path):
    record(tmp_path, "env", error=ENV, frame=False)
    assert plan_resume(tmp_path, [("env", 0)], max_tries=2).pending == (("env", 0),)
    assert [a.attempt for a in iter_archived_tries(tmp_path)] == [1]


def test_the_suite_is_written_atomically_and_read_back(tmp_path):
    assert read_suite(tmp_path) is None  # a run recorded before suite.json
    suite = write_suite(tmp_path, [("a", "calc"), ("b", "writer")], runs=2)
    assert read_suite(tmp_path) == suite
    assert suite.pairs() == [("a", 0), ("b", 0), ("a", 1), ("b", 1)]
    stored = json.loads((tmp_path / "suite.json").read_text())
    tasks = [{"task_id": "a", "domain": "calc"}, {"task_id": "b", "domain": "writer"}]
    assert stored == {"runs": 2, "tasks": tasks}
    assert [p.name for p in tmp_path.iterdir()] == ["suite.json"]  # no temp file left behind


def test_a_resume_adds_to_the_stored_suite(tmp_path):
    write_suite(tmp_path, [("a", "calc"), ("b", "writer")], runs=3)
    suite = write_suite(tmp_path, [("c", "os"), ("a", "calc")], runs=1)
    assert suite.tasks == (("a", "calc"), ("b", "writer"), ("c", "os"))
    assert suite.runs == 3  # records of runs 1 and 2 exist
    with pytest.raises(ConfigError, match="'a' has domain 'os' here and 'calc'"):
        write_suite(tmp_path, [("a", "os")], runs=1)
