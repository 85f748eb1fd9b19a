"""The seeded template suite without a desktop: determinism, variety, loading, scripts."""

from __future__ import annotations

import re

import pytest
from osworld_mcp_env.actions import GuiAction, parse_action
from osworld_mcp_env.devkit.validate import suite_entries
from osworld_mcp_env.errors import DesktopError, TaskNotFound
from osworld_mcp_env.tasks import TaskLibrary, load_split, load_task, split_task_ids
from osworld_mcp_env.tasks.bundled import bundled_solution
from osworld_mcp_env.tasks.bundled.export import seeded_files, seeded_root
from osworld_mcp_env.tasks.templates import DOMAINS, TEMPLATES, instance_id, instantiate

ALL = TEMPLATES.names()


def test_the_suite_has_60_templates_over_the_domains():
    domains = {TEMPLATES.get(t).domain for t in ALL}
    assert len(ALL) >= 60
    assert domains >= set(DOMAINS) - {"chrome"}


@pytest.mark.parametrize("template_id", ALL)
def test_same_seed_gives_byte_identical_files_and_task(template_id: str):
    a, b = instantiate(template_id, 3), instantiate(template_id, 3)
    assert a.inputs == b.inputs and a.gold == b.gold and a.task == b.task
    assert a.gui == b.gui and a.near_miss == b.near_miss and a.tools == b.tools


@pytest.mark.parametrize("template_id", ALL)
def test_two_seeds_give_different_data_and_wording(template_id: str):
    a, b = instantiate(template_id, 0), instantiate(template_id, 1)
    assert a.inputs != b.inputs or a.task["evaluator"] != b.task["evaluator"]
    # Wording varies too, though two given seeds may draw the same words.
    assert any(instantiate(template_id, s).task["instruction"] != a.task["instruction"] for s in range(1, 5))
    assert b.task["id"] == instance_id(template_id, 1) == f"{template_id}@1"


@pytest.mark.parametrize("template_id", ALL)
def test_every_instance_loads_strictly_and_its_scripts_are_valid(template_id: str):
    for seed in range(5):
        inst = instantiate(template_id, seed)
        task = load_task(inst.task)
        assert task.supported and task.id == instance_id(template_id, seed)
        assert inst.gui != inst.near_miss
        for call in inst.gui + inst.near_miss:
            assert isinstance(parse_action(call, (1920, 1080)), GuiAction), call
        assert (inst.tools is not None) == TEMPLATES.get(template_id).tool_reachable
        if inst.tools is not None:
            assert any(c["name"] != "computer_use" for c in inst.tools)


def test_bundled_solution_serves_instances_and_says_when_no_tool_route():
    assert bundled_solution("calc-column-sum@4", "tools") == instantiate("calc-column-sum", 4).tools
    assert bundled_solution("calc-sum-column", "oracle")  # the original suite still works
    with pytest.raises(Exception, match="not tool-reachable"):
        bundled_solution("os-write-file", "tools")


def test_suite_entries_filter_and_reject_unknown_ids():
    entries = suite_entries("seeded", seeds=2, task_ids=["calc-column-sum"])
    assert [e.task_id for e in entries] == ["calc-column-sum", "calc-column-sum@1"]
    with pytest.raises(ValueError, match="Not in suite"):
        suite_entries("seeded", task_ids=["nope"])


def test_seed0_files_on_disk_equal_the_templates():
    root = seeded_root()
    on_disk = {str(p.relative_to(root)): p.read_text(encoding="utf-8") for p in root.rglob("*.json")}
    assert on_disk == seeded_files(), "run: python -m osworld_mcp_env.tasks.bundled.export"


def test_train_and_test_splits_partition_the_templates_and_resolve():
    train, test = load_split(seeded_root() / "train.json"), load_split(seeded_root() / "test.json")
    train_ids, test_ids = split_task_ids(train), split_task_ids(test)
    assert not set(train_ids) & set(test_ids)
    assert sorted(train_ids + test_ids) == sorted(ALL)
    assert set(test) == set(train)  # every domain is evaluated and trained on
    library = TaskLibrary([seeded_root() / "examples"])
    for domain, ids in test.items():
        for task_id in ids:
            path = library.find(task_id)
            assert path.parent.name == domain
            assert load_task(path).to_dict() == load_task(instantiate(task_id, 0).task).to_dict()


def test_template_at_seed_loads_the_instance():
    task = load_task("calc-column-sum@7")
    assert task.id == "calc-column-sum@7" and task.supported
    assert task.to_dict() == load_task(instantiate("calc-column-sum", 7).task).to_dict()
    assert task.instruction != load_task("calc-column-sum").instruction
    assert load_task("calc-column-sum@0").id == "calc-column-sum"  # seed 0 is the suite's JSON task


@pytest.mark.parametrize(
    ("task_id", "message"),
    [
        ("calc-colum-sum@7", "Did you mean 'calc-column-sum'?"),
        (
            "calc-column-sum@x",
            "the seed 'x' is not an integer >= 0; write TEMPLATE@SEED, e.g. 'calc-column-sum@7'",
        ),
        ("calc-column-sum@-1", "the seed '-1' is not an integer >= 0"),
    ],
)
def test_a_bad_template_or_seed_is_not_found_with_a_hint(task_id: str, message: str):
    with pytest.raises(TaskNotFound, match=re.escape(message)):
        load_task(task_id)


def test_env_reset_rejects_a_bad_instance_before_any_desktop_starts(make_env):
    env = make_env(task="calc-colum-sum@7")
    with pytest.raises(TaskNotFound, match=re.escape("Did you mean 'calc-column-sum'?")):
        env.reset()
    with pytest.raises(TaskNotFound, match="seed 'x'"):
        env.reset(options={"task": "calc-column-sum@x"})
    with pytest.raises(DesktopError, match="not running"):
        env.unwrapped.desktop  # noqa: B018 - the property raises while no desktop runs


@pytest.mark.desktop
def test_env_resets_to_a_seeded_instance_and_its_oracle_scores_1(make_env):
    instance = instantiate("os-write-file", 7)
    env = make_env(task="os-write-file@7", enable_mcp=False)
    obs, _ = env.reset()
    assert (
        obs["instruction"]
        == instance.task["instruction"]
        != instantiate("os-write-file", 0).task["instruction"]
    )
    for call in instance.gui:
        _, reward, terminated, _, _ = env.step(call)
    assert terminated and reward == 1.0
