"""Pass-rate profiling: the band is strict, crashes are not failures, the profile is what rollouts scored."""

import json
import shutil
from pathlib import Path

import gymnasium as gym
import pytest
import torch
from grpo_trainer.cli import main
from grpo_trainer.errors import ConfigError
from grpo_trainer.model.tiny import TinyPolicy
from grpo_trainer.model.toy_menu import MENU
from grpo_trainer.objectives.curation import CurationConfig, in_band, pass_rate, profile_tasks, write_profile
from grpo_trainer.objectives.rewards import RewardConfig
from grpo_trainer.rollouts.episode import Episode
from grpo_trainer.rollouts.group import RolloutConfig
from grpo_trainer.rollouts.tasks import resolve_tasks
from grpo_trainer.rollouts.vector import make_group_env
from osworld_mcp_env.tasks import BUNDLED_TASK_IDS
from osworld_mcp_env.tasks.bundled.export import seeded_root
from osworld_mcp_env.tasks.templates import TRAIN_SEEDS, parse_instance_id

BAND = CurationConfig()  # the study's (0.1, 0.9)
TOY = "grpo_trainer:ToolOrGui-v0"
BUNDLED_DIR = Path(__file__).parents[3] / "packages/osworld_mcp_env/src/osworld_mcp_env/tasks/bundled"


def _episodes(scores):
    """Episodes with these scores; ``"crash"`` is an episode that ended in an error."""
    out = []
    for member, score in enumerate(scores):
        episode = Episode("t", 0, member, "")
        if score == "crash":
            episode.crash = "desktop died"
        else:
            episode.score = score
        out.append(episode)
    return out


def test_the_band_is_strict_on_both_ends():
    assert not in_band(0.1, BAND) and not in_band(0.9, BAND)
    assert in_band(0.125, BAND) and in_band(0.875, BAND)
    assert not in_band(0.0, BAND) and not in_band(1.0, BAND) and not in_band(None, BAND)
    with pytest.raises(ConfigError, match="low < high"):
        CurationConfig(low=0.9, high=0.1)


def test_crashes_leave_the_pass_rate_and_are_counted():
    # 3 successes of 7 scored episodes (the crash is neither): p = 3/7 = 0.4286, inside the band.
    profile = pass_rate("t", _episodes([1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, "crash"]), RewardConfig(), BAND)
    assert (profile.successes, profile.scored, profile.crashed) == (3, 7, 1)
    assert profile.pass_rate == pytest.approx(3 / 7) and profile.kept


def test_the_success_threshold_decides_what_a_success_is():
    # A partial score 0.5 is a failure at the default threshold 1.0 and a success at 0.5.
    episodes = _episodes([0.5, 0.5, 0.0, 1.0])
    assert pass_rate("t", episodes, RewardConfig(), BAND).pass_rate == 0.25
    assert pass_rate("t", episodes, RewardConfig(success_threshold=0.5), BAND).pass_rate == 0.75


def test_tasks_that_teach_nothing_are_dropped():
    always = pass_rate("t", _episodes([1.0] * 8), RewardConfig(), BAND)
    never = pass_rate("t", _episodes([0.0] * 8), RewardConfig(), BAND)
    all_crashed = pass_rate("t", _episodes(["crash"] * 8), RewardConfig(), BAND)
    assert (always.pass_rate, never.pass_rate, all_crashed.pass_rate) == (1.0, 0.0, None)
    assert not (always.kept or never.kept or all_crashed.kept)


def test_profiling_rolls_out_a_group_per_task_and_writes_the_kept_ids(tmp_path):
    venv = make_group_env(lambda: gym.make(TOY), 8)
    rollout = RolloutConfig(group_size=8)

    def profile(seed):
        return profile_tasks(
            venv,
            TinyPolicy(MENU, seed=0),
            resolve_tasks(["toy", "toy", "toy"], TOY),
            rollout,
            RewardConfig(max_steps=6),
            BAND,
            torch.Generator().manual_seed(seed),
        )

    try:
        first, again = profile(3), profile(3)
    finally:
        venv.close()
    assert first == again  # the same generator seed gives the same samples, so the same profile
    assert all(p.scored + p.crashed == 8 for p in first)
    # An untrained policy solves the toy task sometimes: the profile must see both outcomes.
    assert any(0 < p.successes < p.scored for p in first), first
    path = write_profile(first, tmp_path / "profile.json")
    document = json.loads(path.read_text())
    assert document["kept"] == [p.task for p in first if p.kept]
    assert [t["pass_rate"] for t in document["tasks"]] == [p.pass_rate for p in first]
    assert not list(tmp_path.glob("*.partial"))


def test_profile_tasks_resolves_suite_specs_as_training_does(tmp_path):
    """``--profile-tasks`` takes what ``tasks`` takes: suites, split files, directories, task ids.

    The toy env stands in for the desktop (it ignores which task it is reset to); the profile
    says which task each group was reset to, so the resolution is what is checked.
    """
    split = tmp_path / "split.json"
    split.write_text(json.dumps({"libreoffice_calc": ["calc-column-sum@7"]}))
    folder = tmp_path / "tasks"
    folder.mkdir()
    shutil.copy(BUNDLED_DIR / "os-create-file.json", folder)
    config = tmp_path / "c.toml"
    config.write_text(
        f'policy = "tiny"\ntasks = ["bundled", "seeded:test", "{split}", "{folder}"]\n'
        # One step per episode: the resolution is under test, not the rollouts.
        "env_kwargs = {max_steps = 1}\n[rollout]\ngroup_size = 2\n[reward]\nmax_steps = 1\n"
        "[curation]\nlow = 0.0\nhigh = 1.0\n"
        f'[engine]\nbackend = "torch"\noutput_dir = "{tmp_path / "run"}"\n'
    )
    out = tmp_path / "profile.json"
    assert main(["--config", str(config), "--profile-tasks", str(out)]) == 0
    rows = json.loads(out.read_text())["tasks"]
    held_out = [tid for ids in json.loads((seeded_root() / "test.json").read_text()).values() for tid in ids]
    bundled, seeded, pinned, files = (
        rows[:3],
        rows[3 : 3 + len(held_out)],
        rows[3 + len(held_out)],
        rows[4 + len(held_out) :],
    )
    assert [(r["task"], r["entry"]) for r in bundled] == [(tid, tid) for tid in BUNDLED_TASK_IDS]
    # A template is rolled out as a fresh instance at a training seed and kept by its template id.
    drawn = [parse_instance_id(r["task"]) for r in seeded]
    assert [template for template, _ in drawn] == [r["entry"] for r in seeded] == held_out
    assert all(seed in TRAIN_SEEDS for _, seed in drawn)
    assert (pinned["task"], pinned["entry"]) == ("calc-column-sum@7", "calc-column-sum@7")  # pinned seed
    assert [r["task"] for r in files] == [str(folder / "os-create-file.json")]
    assert all(r["scored"] + r["crashed"] == 2 for r in rows)
