"""The SFT dataset of bundled episodes recorded on the real desktop by the runner.

Two scripted episodes succeed (calc-sum-column by its MCP tools: 3 steps; os-create-file through
the GUI: 5 steps), one fails (os-create-file's near miss). With the released Qwen3-VL image
settings the 1920x1080 frames come out at HybridCUA's SFT sizes: 2,040 visual tokens for the
current frame, 510 for the two previous ones (downscaled by 0.5 each side).
"""

import pytest

pytest.importorskip("torch")

import tiny_qwen
from desktop_support import desktop_missing
from grpo_trainer.model.hf_policy import HFTrainablePolicy
from grpo_trainer.sft.dataset import IGNORE_INDEX, SFTDataset
from grpo_trainer.sft.settings import SFTSettings
from hybrid_agent.agent_loop import AgentConfig
from hybrid_agent.policies import make_policy
from hybrid_agent.runner import RunConfig, Runner
from hybrid_agent.suite import load_suite

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.slow,
    pytest.mark.skipif(
        desktop_missing() is not None, reason=f"embedded desktop unavailable: {desktop_missing()}"
    ),
]


def record(out, policy, task_ids):
    tasks = [t for t in load_suite("bundled") if t.task_id in task_ids]
    config = RunConfig(policy=policy, envs=1, runs=1)
    result = Runner(config, make_policy(policy), out, progress=False).evaluate(tasks)
    assert (result.finished, result.errors) == (len(task_ids), 0)
    return out


def test_bundled_episodes_become_one_sample_per_step_of_the_successful_ones(tmp_path):
    solved = record(tmp_path / "solved", "scripted:tools", ("calc-sum-column", "os-create-file"))
    missed = record(tmp_path / "missed", "scripted:wrong", ("os-create-file",))
    processor = tiny_qwen.processor(tiny_qwen.qwen3_vl_image_processor())
    policy = HFTrainablePolicy(tiny_qwen.tiny_model(processor), processor)
    # The tiny BPE (400 ids) spells text in ~4x Qwen's tokens, so 12,000 would drop real-size samples here.
    settings = SFTSettings(max_tokens=50_000)
    data = SFTDataset(policy, AgentConfig(), settings, policy.module.config.image_token_id)
    summary = data.add_runs([solved, missed])
    print("\n".join(summary.lines()))
    assert (summary.episodes, summary.trajectories, summary.samples, summary.dropped) == (3, 2, 8, 0)
    assert sorted({(s.task_id, s.step) for s in data.samples}) == [
        ("calc-sum-column", t) for t in range(3)
    ] + [("os-create-file", t) for t in range(5)]
    by_step = {(s.task_id, s.step): s for s in data.samples}
    assert by_step[("os-create-file", 0)].visual_tokens == (2040,)
    assert by_step[("os-create-file", 1)].visual_tokens == (510, 2040)
    assert by_step[("os-create-file", 4)].visual_tokens == (510, 510, 2040)
    tokenizer = processor.tokenizer
    calc = by_step[("calc-sum-column", 0)]
    assert calc.labels()[: len(calc.prompt_ids)] == [IGNORE_INDEX] * len(calc.prompt_ids)
    target = tokenizer.decode(calc.response_ids)
    assert target.startswith("Action: libreoffice_calc.set_cell_value(")
    assert target.endswith("</tool_call><|im_end|>")
    assert "libreoffice_calc.save" in tokenizer.decode(calc.prompt_ids)  # the tools shown, from the catalog
    # The click at the screen centre (960, 540) is learnt on Qwen3-VL's grid.
    click = tokenizer.decode(by_step[("os-create-file", 0)].response_ids)
    assert '"coordinate": [500, 500]' in click
    assert list(data.prompt(7)) == data.samples[7].prompt_ids
