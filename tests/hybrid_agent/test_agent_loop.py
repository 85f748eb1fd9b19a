"""The one agent turn: a reply means what it says, or nothing; per-episode scheduling; errors rerun.

The env is ``grpo_trainer``'s ToolOrGui toy (the desktop env's interface, microsecond
steps): these tests are about the loop's reading of replies and its scheduling, which no
desktop changes. Desktop runs of the same loop are in test_runner_desktop.py.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import grpo_trainer  # noqa: F401  (registers the toy env)
import gymnasium as gym
import pytest
from grpo_trainer.model.toy_menu import GUI_TYPE, TERMINATE, TOOL_WRITE
from hybrid_agent.agent_loop import TRUNCATED_FEEDBACK, AgentConfig, AgentEpisode, AgentLoop, reply_text
from hybrid_agent.dispatch import PolicyDispatcher
from hybrid_agent.messages import to_openai
from hybrid_agent.policies.base import Generation, PolicyRequest
from hybrid_agent.recorder import iter_archived_tries, iter_episodes, read_suite
from hybrid_agent.runner import RunConfig, Runner
from hybrid_agent.suite import SuiteTask

TOY = "grpo_trainer:ToolOrGui-v0"
CLAIM = TERMINATE  # terminate(success): the claim a cut-off reply must never make


def _start(env: gym.Env) -> AgentEpisode:
    obs, info = env.reset(seed=0)
    return AgentEpisode.start("toy", 0, obs, info)


def _turn(loop: AgentLoop, env: gym.Env, episode: AgentEpisode, generation: Generation):
    return loop.step(env, episode, loop.observe(episode), generation)


def _last_user_text(loop: AgentLoop, episode: AgentEpisode) -> str:
    messages = to_openai(loop.observe(episode).request.messages)
    return " ".join(p["text"] for p in messages[-1]["content"] if p["type"] == "text")


@pytest.fixture
def env():
    env = gym.make(TOY, max_steps=6)
    yield env
    env.close()


def test_a_cut_off_reply_executes_nothing_and_the_episode_goes_on(env):
    loop = AgentLoop(AgentConfig())
    episode = _start(env)
    cut = Generation(text=f"Let me finish.\n{CLAIM}", output_tokens=8192, finish_reason="length")
    outcome = _turn(loop, env, episode, cut)
    assert not outcome.ended and outcome.call is None and not outcome.exec_ok
    assert outcome.record["parse"]["code"] == "truncated"
    assert outcome.record["finish_reason"] == "length"
    assert outcome.record["model_output"] == cut.text  # the raw text is kept
    assert "action" not in outcome.record and episode.steps == []
    assert TRUNCATED_FEEDBACK in _last_user_text(loop, episode)  # the model is told
    # The same claim, not cut off, is executed and ends the episode.
    done = _turn(loop, env, episode, Generation(text=CLAIM, finish_reason="stop"))
    assert done.ended and done.end is not None and done.end["claimed_success"] is True
    assert done.end["steps"] == 2


def test_thinking_mode_never_runs_a_call_inside_unfinished_reasoning(env):
    loop = AgentLoop(AgentConfig(thinking=True))
    episode = _start(env)
    draft = f"The cell may be done already, so maybe\n{CLAIM}"  # the template opened <think>
    outcome = _turn(loop, env, episode, Generation(text=draft, finish_reason="stop"))
    assert not outcome.ended and outcome.record["parse"]["code"] == "unfinished_reasoning"
    finished = f"A1 holds 5 now.\n</think>\n\n{CLAIM}"
    assert _turn(loop, env, episode, Generation(text=finished, finish_reason="stop")).ended


def test_an_opened_think_without_its_end_is_unfinished_in_any_mode(env):
    loop = AgentLoop(AgentConfig())
    outcome = _turn(loop, env, _start(env), Generation(text=f"<think>\nhmm {CLAIM}"))
    assert outcome.record["parse"]["code"] == "unfinished_reasoning" and not outcome.ended


def test_reasoning_returned_apart_is_recorded_parsed_past_and_kept_with_keep_think(env):
    loop = AgentLoop(AgentConfig(keep_think=True, thinking=True))
    episode = _start(env)
    generation = Generation(text=TOOL_WRITE, reasoning="The tool writes A1 directly.", finish_reason="stop")
    assert reply_text(generation).startswith("<think>\nThe tool writes A1 directly.\n</think>")
    outcome = _turn(loop, env, episode, generation)
    assert outcome.exec_ok and outcome.call is not None and outcome.call.name.endswith("set_cell_value")
    assert outcome.record["reasoning_apart"] is True
    assistant = [m for m in loop.observe(episode).request.messages if m["role"] == "assistant"]
    assert "The tool writes A1 directly." in assistant[-1]["content"]


def test_a_policy_error_ends_the_episode_without_stepping_the_env(env):
    loop = AgentLoop(AgentConfig())
    episode = _start(env)
    failed = Generation(text="", error="HTTP 401: no key", error_code="auth")
    outcome = _turn(loop, env, episode, failed)
    assert outcome.ended and outcome.end is not None
    assert outcome.end["error"] == {"type": "policy_error", "code": "auth", "message": "HTTP 401: no key"}
    assert env.unwrapped._t == 0  # the env never saw the step


def test_bm25_top_k_bounds_the_tools_shown(env):
    episode = _start(env)
    served = AgentLoop(AgentConfig(retrieval=False)).observe(episode).tools
    top1 = AgentLoop(AgentConfig(top_k=1)).observe(episode).tools
    assert len(served) == 2 and len(top1) == 1 and top1[0] in served


def test_the_semantic_channel_is_shown_whole_beside_the_top_k(env):
    # With ax_tools the env lists the ax tools in every app's catalog; a top-k cut over the
    # app's tools must not hide them (the hcu setting's agent called ax.act and was told
    # the name was not shown).
    episode = _start(env)
    ax = [{"name": f"ax.{method}", "description": f"ax {method}"} for method in ("observe", "find", "act")]
    episode.info = {**episode.info, "tools": [*episode.info["tools"], *ax]}
    shown = [tool.qualified_name for tool in AgentLoop(AgentConfig(top_k=1)).observe(episode).tools]
    assert len(shown) == 4 and shown[1:] == ["ax.observe", "ax.find", "ax.act"]
    assert not shown[0].startswith("ax.")


# --- scheduling ------------------------------------------------------------------------


class _GatedPolicy:
    """Solves every task in two calls; the ``slow`` task's first reply waits for ``gate``."""

    name = "gated"
    concurrent = True

    def __init__(self, fast_runs: int) -> None:
        self.gate = threading.Event()
        self.fast_done: set[str] = set()
        self.fast_runs = fast_runs
        self.gate_opened: bool | None = None
        self._lock = threading.Lock()

    def generate(self, requests: Sequence[PolicyRequest]) -> list[Generation]:
        out = []
        for request in requests:
            if request.task_id == "slow" and request.step == 0:
                # Event-driven: per-episode scheduling opens it; a lockstep loop never could.
                self.gate_opened = self.gate.wait(timeout=120)
            if request.step == 1 and request.task_id.startswith("fast"):
                with self._lock:
                    self.fast_done.add(request.task_id)
                    if len(self.fast_done) == self.fast_runs:
                        self.gate.set()
            out.append(Generation(text=GUI_TYPE if request.step == 0 else TERMINATE, finish_reason="stop"))
        return out


def _toy_tasks(names: Sequence[str]) -> list[SuiteTask]:
    return [SuiteTask(name, "toy", "toy") for name in names]


def test_an_env_that_finishes_starts_its_next_task_while_another_is_still_busy(tmp_path):
    policy = _GatedPolicy(fast_runs=3)
    tasks = _toy_tasks(["slow", "fast1", "fast2", "fast3"])
    runner = Runner(
        RunConfig(policy="gated", envs=2), policy, tmp_path, lambda: gym.make(TOY), progress=False
    )
    result = runner.evaluate(tasks)
    assert policy.gate_opened is True  # three fast episodes ran on one env while "slow" waited
    assert (result.finished, result.errors) == (4, 0)
    assert sorted(r.end["score"] for r in iter_episodes(tmp_path)) == [1.0] * 4


class _BatchRecorder:
    """A batched (not concurrent) policy: remembers the size of every batch it got."""

    name = "batched"

    def __init__(self) -> None:
        self.sizes: list[int] = []

    def generate(self, requests: Sequence[PolicyRequest]) -> list[Generation]:
        self.sizes.append(len(requests))
        return [Generation(text=GUI_TYPE if r.step == 0 else TERMINATE) for r in requests]


def test_lockstep_batches_every_env_at_work(tmp_path):
    policy = _BatchRecorder()
    config = RunConfig(policy="batched", envs=3, schedule="lockstep")
    result = Runner(config, policy, tmp_path, lambda: gym.make(TOY), progress=False).evaluate(
        _toy_tasks("abc")
    )
    assert result.finished == 3 and policy.sizes == [3, 3]  # two rounds of three


def test_the_dispatcher_never_holds_a_lone_request():
    policy = _BatchRecorder()
    dispatcher = PolicyDispatcher(policy, members=4)
    answer = dispatcher.generate(PolicyRequest([], task_id="a"))  # three members never ask
    assert answer.text == GUI_TYPE and policy.sizes == [1]


def test_a_policy_answering_the_wrong_count_is_a_config_error():
    class Short:
        name = "short"

        def generate(self, requests):
            return []

    from hybrid_agent.errors import ConfigError

    with pytest.raises(ConfigError, match="answered 0 of 1"):
        PolicyDispatcher(Short(), members=1).generate(PolicyRequest([]))


# --- errors and resume -----------------------------------------------------------------


class _FlakyPolicy:
    """The first try of every episode fails at transport; later tries solve it."""

    name = "flaky"
    concurrent = True

    def __init__(self, fail: bool) -> None:
        self.fail = fail

    def generate(self, requests: Sequence[PolicyRequest]) -> list[Generation]:
        if self.fail:
            return [Generation("", error="connection refused", error_code="transport") for _ in requests]
        return [Generation(text=GUI_TYPE if r.step == 0 else TERMINATE) for r in requests]


def test_resume_reruns_errored_episodes_and_keeps_the_failed_try(tmp_path):
    config = RunConfig(policy="flaky")
    tasks = _toy_tasks(["a", "b"])
    first = Runner(config, _FlakyPolicy(fail=True), tmp_path, lambda: gym.make(TOY), progress=False)
    assert first.evaluate(tasks).errors == 2
    second = Runner(config, _FlakyPolicy(fail=False), tmp_path, lambda: gym.make(TOY), progress=False)
    result = second.evaluate(tasks)
    assert (result.retried, result.finished, result.errors) == (2, 2, 0)
    assert [r.end["score"] for r in iter_episodes(tmp_path)] == [1.0, 1.0]
    archived = [t.record.end["error"]["code"] for t in iter_archived_tries(tmp_path)]
    assert archived == ["transport", "transport"]
    assert read_suite(tmp_path).tasks == (("a", "toy"), ("b", "toy"))  # reports count every task


def test_errors_stop_being_retried_after_max_tries(tmp_path):
    config = RunConfig(policy="flaky")
    tasks = _toy_tasks(["a"])
    for _ in range(2):
        Runner(
            config, _FlakyPolicy(True), tmp_path, lambda: gym.make(TOY), progress=False, max_tries=2
        ).evaluate(tasks)
    last = Runner(config, _FlakyPolicy(True), tmp_path, lambda: gym.make(TOY), progress=False, max_tries=2)
    result = last.evaluate(tasks)
    assert (result.finished, result.exhausted) == (0, 1)


def test_the_tasks_tool_annotation_goes_into_the_episode_header(tmp_path):
    policy = _FlakyPolicy(fail=False)
    tasks = [SuiteTask("a", "toy", "toy", tool_reachable=True), SuiteTask("b", "toy", "toy")]
    Runner(RunConfig(policy="flaky"), policy, tmp_path, lambda: gym.make(TOY), progress=False).evaluate(tasks)
    headers = {r.task_id: r.header for r in iter_episodes(tmp_path)}
    assert headers["a"]["tool_reachable"] is True and "tool_reachable" not in headers["b"]


def test_the_frame_is_shown_and_cited_with_actions_that_point_and_only_with_them():
    from grpo_trainer.model.toy_menu import CLICK
    from hybrid_agent.agent_loop import cite_frame
    from hybrid_agent.trajectory import Call

    click = Call("computer_use", {"action": "left_click", "coordinate": [5, 6]})
    assert cite_frame(click, 7) == {"action": "left_click", "coordinate": [5, 6], "frame_id": 7}
    assert cite_frame(click, None) == click.arguments
    typing = Call("computer_use", {"action": "type", "text": "x"})
    assert cite_frame(typing, 7) == typing.arguments  # keys go to the focus: no point to check
    tool = Call("libreoffice_calc.set_cell_value", {"cell": "A1", "coordinate": [1, 2]})
    assert cite_frame(tool, 7) == tool.arguments
    # Through the loop: the turn names the frame, and the click carries it to the env.
    env = gym.make(TOY, max_steps=6)
    try:
        obs, info = env.reset(seed=0)
        episode = AgentEpisode.start("toy", 0, obs, {**info, "frame_id": 3})
        loop = AgentLoop(AgentConfig())
        assert "The screenshot is frame 3;" in _last_user_text(loop, episode)
        decision = loop.decide(loop.observe(episode), Generation(text=CLICK))
        assert decision.action is not None and decision.action["arguments"]["frame_id"] == 3
        off = AgentLoop(AgentConfig(cite_frames=False))
        assert "frame 3" not in _last_user_text(off, episode)
        assert "frame_id" not in off.decide(off.observe(episode), Generation(text=CLICK)).action["arguments"]
    finally:
        env.close()


def test_a_step_record_keeps_the_focused_windows_title(env):
    """A rewrite tells a terminal from a document by it (hybrid_agent.rewrite.terminal)."""
    loop = AgentLoop(AgentConfig())
    obs, info = env.reset(seed=0)
    episode = AgentEpisode.start("toy", 0, obs, {**info, "active_window": "Terminal - "})
    assert _turn(loop, env, episode, Generation(text=GUI_TYPE)).record["window"] == "Terminal - "
    assert _turn(loop, env, episode, Generation(text=GUI_TYPE)).record["window"] is None  # the toy has none
