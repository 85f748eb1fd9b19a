"""HybridCUA's two stages chained on the real desktop, each through the command an outsider runs.

1. ``hybrid-agent eval`` records the GUI oracle of the pinned bundled task os-create-file (click
   into the setup's terminal, type the command, Enter, wait, done); ``hybrid-agent rewrite``
   turns it into HybridCUA's grammar (one direct command, the wait, done) and keeps it because
   its replay on a fresh desktop scores 1.
2. ``grpo-train sft`` trains a tiny Qwen3-VL (2 layers, width 64, built here) on those 3 samples
   until it has memorised them: memorising is the point, it shows that what SFT learns is what
   the policy is shown at inference (same context rule, adapter, frame ids and end of turn).
3. ``hybrid-agent eval --policy hf:PATH`` at temperature 0 solves the task with the SFT export.
4. ``grpo-train`` starts from that export on the desktop env with the same ``[agent]``: sampled
   rollouts (temperature 1) scored by the task's evaluator, GRPO updates; its exported last
   checkpoint still solves the task greedily.
"""

import re
import shutil

import pytest

pytest.importorskip("peft")

import tiny_qwen
from desktop_support import desktop_missing
from grpo_trainer.cli import main as grpo_train
from hybrid_agent.cli import main as hybrid_agent
from hybrid_agent.recorder import iter_episodes
from osworld_mcp_env.tasks import BUNDLED_DIR
from tiny_vlm import register_processor

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.slow,
    pytest.mark.skipif(
        desktop_missing() is not None, reason=f"embedded desktop unavailable: {desktop_missing()}"
    ),
]

TASK = "os-create-file"
COMMAND = "mkdir -p /home/user/projects && printf 'Hello OSWorld\\n' > /home/user/projects/hello.txt"
# What the model is shown, the same in SFT, evaluation and GRPO: HybridCUA's replies, the SFT
# context rule, no MCP tools (the bash action is the CLI).
AGENT = 'adapter = "hybridcua"\ngui_only = true\ncontext = "win31+images+downscale"\n'
EVAL_AGENT = ["--adapter", "hybridcua", "--gui-only", "--context", "win31+images+downscale"]
ENGINE = 'backend = "torch"\nprecision = "fp32"\nseed = 0\n'


def evaluate(policy, suite, out, *flags):
    """``hybrid-agent eval`` of one run of the suite; returns the episode's record."""
    argv = ["eval", "--suite", str(suite), "--policy", policy, "--runs", "1", "--out", str(out), *flags]
    assert hybrid_agent([*argv, "--env-option", "enable_bash=true"]) == 0
    (record,) = iter_episodes(out)
    return record


def report(capsys, *measured):
    """Prints a measurement past pytest's capture: a passing run's log shows it too."""
    with capsys.disabled():
        print(*measured)


def calls(record):
    return [(s["action"]["name"], s["action"]["arguments"].get("action")) for s in record.steps]


@pytest.mark.timeout(3600)  # about 10 minutes alone on 2 cores
def test_sft_on_oracle_episodes_solves_the_task_and_grpo_from_its_checkpoint_keeps_solving_it(
    tmp_path, capsys
):
    register_processor()  # hf:PATH loads the tiny processor through AutoProcessor
    suite = tmp_path / "suite"
    suite.mkdir()
    shutil.copy(BUNDLED_DIR / f"{TASK}.json", suite)

    oracle = evaluate("scripted", suite, tmp_path / "oracle")
    assert oracle.end["score"] == 1.0 and len(oracle.steps) == 5
    rewritten = tmp_path / "rewritten"
    argv = ["rewrite", str(tmp_path / "oracle"), "--out", str(rewritten), "--mode", "interleaved"]
    assert hybrid_agent([*argv, "--suite", str(suite)]) == 0
    assert "1 episodes: 1 converted, 1 replayed, 1 kept" in capsys.readouterr().out

    processor = tiny_qwen.processor(tiny_qwen.small_image_processor())
    base = tmp_path / "base"
    tiny_qwen.tiny_model(processor, hidden_size=64, layers=2).save_pretrained(base)
    processor.save_pretrained(base)
    sft = tmp_path / "sft.toml"
    sft.write_text(
        f'policy = "hf:{base}"\n[agent]\n{AGENT}[model]\ngradient_checkpointing = false\n'
        f'[engine]\n{ENGINE}output_dir = "{tmp_path / "sft"}"\n'
        # One update per epoch over the 3 samples; a constant large step memorises them in ~100.
        f'[sft]\nruns = ["{rewritten}"]\nlr = 1e-2\nschedule = "constant"\nwarmup_ratio = 0.0\n'
        "epochs = 100\nbatch_size = 3\nmicro_batch_size = 3\nsave_every = 100\n"
        "max_tokens = 50000\n"  # the tiny BPE spells text in ~4x Qwen's tokens
    )
    assert grpo_train(["sft", "--config", str(sft)]) == 0
    printed = capsys.readouterr().out
    print(printed[-2000:])
    assert "samples: 3 from 1 successful trajectories (1 episodes read)" in printed
    losses = [float(x) for x in re.findall(r"update \d+: loss ([0-9.]+)", printed)]
    report(capsys, "sft loss every 10 updates:", [round(x, 4) for x in losses[::10]], "last", losses[-1])
    assert len(losses) == 100 and losses[0] > 5.0 and losses[-1] < 0.01

    solved = evaluate(f"hf:{tmp_path / 'sft' / 'hf'}", suite, tmp_path / "greedy-sft", *EVAL_AGENT)
    report(capsys, "SFT policy, greedy:", calls(solved), solved.end["score"])
    assert solved.end["score"] == 1.0 and solved.end["terminated"]
    # HybridCUA's bash action is the env's bash tool; wait and terminate stay computer_use actions.
    assert calls(solved) == [("bash", None), ("computer_use", "wait"), ("computer_use", "terminate")]
    assert solved.steps[0]["action"]["arguments"]["command"] == COMMAND

    grpo = tmp_path / "grpo.toml"
    grpo.write_text(
        f'policy = "hf:{tmp_path / "sft" / "hf"}"\nenv_id = "osworld_mcp_env:OSWorldMCP-v0"\n'
        f'env_kwargs = {{enable_bash = true}}\ntasks = ["{TASK}"]\n[agent]\n{AGENT}'
        "[model]\ngradient_checkpointing = false\n"
        "[rollout]\ngroup_size = 2\ntasks_per_step = 1\nmax_new_tokens = 400\nprepared_resets = false\n"
        "[reward]\nmax_steps = 6\n[optim]\nlr = 1e-5\ntotal_steps = 2\nupdates_per_batch = 1\n"
        f'[engine]\n{ENGINE}output_dir = "{tmp_path / "grpo"}"\nsave_every = 2\n'
    )
    assert grpo_train(["--config", str(grpo)]) == 0
    printed = capsys.readouterr().out
    print(printed[-2000:])
    success = [float(x) for x in re.findall(r"step \d+: reward [-0-9.]+ success ([0-9.]+)", printed)]
    report(capsys, "GRPO success rate per step (sampled at temperature 1, real evaluator):", success)
    assert len(success) == 2 and min(success) >= 0.5

    exported = tmp_path / "grpo-hf"
    checkpoint = tmp_path / "grpo" / "checkpoints"
    # fp32 as trained: a memorised policy's greedy path is what the test compares, bf16 could move it.
    argv = ["export", "--checkpoint", str(checkpoint), "--out", str(exported), "--dtype", "float32"]
    assert grpo_train(argv) == 0
    after = evaluate(f"hf:{exported}", suite, tmp_path / "greedy-grpo", *EVAL_AGENT)
    report(capsys, "GRPO policy, greedy:", calls(after), after.end["score"])
    assert after.end["score"] == 1.0 and after.end["terminated"]
