"""The step-prefix dataset of a recorded run: one sample per executed step of each successful episode.

The run is recorded by hybrid_agent's runner over the toy spreadsheet (sft_setup): runs 0-2
succeed (3 executed steps each; run 2 also has a malformed reply that executed nothing), run 3
fails. Prompts are the tiny Qwen3-VL policy's own encoding of the agent loop's context.
"""

import pytest

pytest.importorskip("torch")

from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict

import numpy as np
from grpo_trainer.sft.dataset import IGNORE_INDEX, DatasetError, SFTDataset, image_token_runs, rebuild_episode
from grpo_trainer.sft.settings import SFTSettings
from hybrid_agent.adapters import get_adapter
from hybrid_agent.agent_loop import AgentConfig
from hybrid_agent.context import ContextConfig
from hybrid_agent.recorder import EpisodeWriter, read_episode
from hybrid_agent.report.osworld import export_osworld
from hybrid_agent.trajectory import Evidence
from sft_setup import record_toy_run, rewrite_step, toy_catalog
from tiny_vlm import tiny_vlm_policy


@pytest.fixture(scope="module")
def policy():
    return tiny_vlm_policy()


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    return record_toy_run(tmp_path_factory.mktemp("run"))


def dataset(policy, run_dir, **settings):
    built = SFTDataset(
        policy, AgentConfig(), SFTSettings(**settings), policy.module.config.image_token_id, toy_catalog()
    )
    built.add_runs([run_dir])
    return built


def test_one_sample_per_executed_step_of_each_successful_episode(policy, run_dir):
    data = dataset(policy, run_dir)
    summary = data.summary
    assert (summary.episodes, summary.trajectories, summary.unexecuted) == (4, 3, 1)
    assert (len(data), summary.samples, summary.dropped) == (9, 9, 0)
    assert [(s.run, s.step) for s in data.samples] == [(r, t) for r in range(3) for t in range(3)]
    # Every sample shows the current frame (4 visual tokens at 16x16 after the processor's upscale);
    # step t also shows its min(t, 2) previous frames downscaled, and no older ones.
    assert [s.visual_tokens for s in data.samples[:3]] == [(4,), (4, 4), (4, 4, 4)]


def test_the_loss_mask_covers_the_final_assistant_turn_only(policy, run_dir):
    data = dataset(policy, run_dir)
    tokenizer = policy.processor.tokenizer
    for sample in data.samples:
        labels = sample.labels()
        assert len(labels) == sample.tokens
        counted = [token for token in labels if token != IGNORE_INDEX]
        assert counted == sample.response_ids
        assert labels[: len(sample.prompt_ids)] == [IGNORE_INDEX] * len(sample.prompt_ids)
        assert sample.response_ids[-1] == tokenizer.convert_tokens_to_ids("<|im_end|>")
    # The click was recorded in screen pixels (8, 4) of the 16x16 screen: Qwen3-VL's target is on its grid.
    first = tokenizer.decode(data.samples[0].response_ids)
    assert first == (
        "Action: left_click(coordinate=[500, 250])\n<tool_call>\n"
        '{"name": "computer_use", "arguments": {"action": "left_click", "coordinate": [500, 250]}}'
        "\n</tool_call><|im_end|>"
    )
    # Step 2's prompt holds steps 0 and 1 as past turns, the grid click among them, not step 2's call.
    prompt = tokenizer.decode(data.samples[2].prompt_ids)
    assert prompt.count("[500, 250]") == 3  # past assistant turn (line + call) and the history line
    assert '"status": "success"' not in prompt
    assert "Tool result: Wrote '5' to A1." in prompt


def test_samples_over_the_token_limit_are_dropped_and_counted(policy, run_dir):
    everything = dataset(policy, run_dir)
    sizes = sorted(s.tokens for s in everything.samples)
    limit = sizes[4]
    limited = dataset(policy, run_dir, max_tokens=limit)
    over = sum(size > limit for size in sizes)
    assert over > 0
    assert (limited.summary.dropped, len(limited)) == (over, 9 - over)
    assert all(s.tokens <= limit for s in limited.samples)


def test_a_prompt_is_rendered_again_from_the_record_and_checked_against_the_stored_ids(
    policy, run_dir, tmp_path
):
    data = dataset(policy, run_dir)
    prompt = data.prompt(5)
    assert list(prompt) == data.samples[5].prompt_ids
    assert len(prompt.images) == 3  # the pixels come back with it
    assert image_token_runs(prompt, policy.module.config.image_token_id) == (4, 4, 4)
    copy = record_toy_run(tmp_path / "copy")
    edited = dataset(policy, copy)
    rewrite_step(copy, run=1, step=1, tool_result_shown="something else")
    with pytest.raises(DatasetError, match="renders differently"):
        edited.prompt(5)  # run 1 step 2 relays step 1's result


def test_a_record_of_another_model_family_is_refused(policy, run_dir):
    with pytest.raises(
        DatasetError, match=r"recorded with the 'qwen3-vl' adapter, training uses 'ui-tars-1\.5'"
    ):
        SFTDataset(policy, AgentConfig(adapter="ui-tars-1.5"), SFTSettings(), 0, toy_catalog()).add_runs(
            [run_dir]
        )


def test_a_several_call_reply_is_rebuilt_with_its_further_calls_and_their_results(tmp_path):
    # HybridCUA's format: one reply ran `ls` then `pwd` (the second under `then`); the next turn
    # relayed both outputs one by one (tool_result_parts).
    adapter = get_adapter("hybridcua")
    ls = {"name": "computer_use", "arguments": {"action": "bash", "command": "ls"}}
    pwd = {"name": "computer_use", "arguments": {"action": "bash", "command": "pwd"}}
    done = {"name": "computer_use", "arguments": {"action": "terminate", "status": "success"}}
    ok = asdict(Evidence(True))
    header = {"task_id": "t", "run": 0, "config": {"agent": {"adapter": "hybridcua"}}}
    header["coordinates"] = str(adapter.coordinates.policy)
    frame = np.zeros((8, 8, 3), dtype=np.uint8)
    with ThreadPoolExecutor(1) as pool:
        writer = EpisodeWriter(tmp_path, "t", 0, header, pool)
        first = {"step": 0, "parse": {"ok": True, "call": ls}, "action": ls, "evidence": ok}
        first["then"] = [{"call": pwd, "action": pwd, "executed": True, "evidence": ok}]
        writer.step(first, frame)
        last = {"step": 1, "parse": {"ok": True, "call": done}, "action": done, "evidence": None}
        writer.step({**last, "tool_result_shown": "a\n\n/home", "tool_result_parts": ["a", "/home"]}, frame)
        writer.finish({"score": 1.0, "error": None, "instruction": "list"})
    episode, unexecuted = rebuild_episode(
        read_episode(tmp_path / "episodes" / "t__run0.jsonl"), tmp_path, adapter, {}
    )
    assert unexecuted == 0 and len(episode.steps) == 2
    assert [e.call.arguments["command"] for e in episode.steps[0].executed] == ["ls", "pwd"]
    assert episode.steps[1].tool_result_parts == ("a", "/home")
    assert episode.instruction == "list"


def test_the_osworld_export_of_a_run_gives_the_same_samples(policy, run_dir, tmp_path):
    export = export_osworld(run_dir, tmp_path / "results")
    assert export.tasks == 4
    recorded, exported = dataset(policy, run_dir), dataset(policy, tmp_path / "results")
    counts = ("episodes", "trajectories", "samples", "dropped", "unexecuted", "tokens", "current_tokens")
    assert [getattr(exported.summary, c) for c in counts] == [getattr(recorded.summary, c) for c in counts]
    assert len(exported) == 9
    fields = ("task_id", "run", "step", "prompt_ids", "response_ids", "visual_tokens")
    assert [[getattr(s, f) for f in fields] for s in exported.samples] == [
        [getattr(s, f) for f in fields] for s in recorded.samples
    ]
    # Re-rendered from the exported folder (its frames, its traj.jsonl), pixels included.
    prompt = exported.prompt(5)
    assert list(prompt) == recorded.samples[5].prompt_ids and len(prompt.images) == 3


def test_a_tree_without_the_exports_episode_file_is_refused(policy, run_dir, tmp_path):
    export_osworld(run_dir, tmp_path / "results")
    next((tmp_path / "results").rglob("episode.json")).unlink()
    with pytest.raises(DatasetError, match=r"has no episode\.json"):
        dataset(policy, tmp_path / "results")
    with pytest.raises(DatasetError, match="neither a run directory"):
        dataset(policy, tmp_path / "empty")


def test_a_rebuilt_context_shows_the_frame_the_turn_showed(tmp_path):
    # The agent loop tells the model "The screenshot is frame N" under [agent] cite_frames; a
    # sample built without that line would train on prompts the policy never meets at inference.
    adapter = get_adapter("hybridcua")
    ls = {"name": "computer_use", "arguments": {"action": "bash", "command": "ls"}}
    done = {"name": "computer_use", "arguments": {"action": "terminate", "status": "success"}}
    header = {"task_id": "t", "run": 0, "config": {"agent": {"adapter": "hybridcua"}}}
    header["coordinates"] = str(adapter.coordinates.policy)
    frame = np.zeros((8, 8, 3), dtype=np.uint8)
    with ThreadPoolExecutor(1) as pool:
        writer = EpisodeWriter(tmp_path, "t", 0, header, pool)
        ok = asdict(Evidence(True))
        first = {"step": 0, "parse": {"ok": True, "call": ls}, "action": ls, "evidence": ok}
        writer.step({**first, "frame_id": 4}, frame)
        last = {"step": 1, "parse": {"ok": True, "call": done}, "action": done, "evidence": None}
        writer.step({**last, "frame_id": 7, "zoom_scale": 2}, frame)
        writer.finish({"score": 1.0, "error": None, "instruction": "list"})
    episode, _ = rebuild_episode(read_episode(tmp_path / "episodes" / "t__run0.jsonl"), tmp_path, adapter, {})
    assert (episode.frame_ids, episode.zoom_scales) == ((4, 7), (None, 2))

    def last_text(t, cite):
        content = episode.context(t, ContextConfig(), cite)[-1]["content"]
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))

    assert "The screenshot is frame 4; your coordinates are checked against it." in last_text(0, True)
    assert "frame 4" not in last_text(0, False)
    assert "The screenshot is a zoom of frame 7: part of the screen enlarged 2 times" in last_text(1, True)
