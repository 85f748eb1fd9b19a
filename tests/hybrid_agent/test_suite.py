"""Suites resolve specs and task ids (``TEMPLATE@SEED`` too) and carry the tool annotation Table 3 reads."""

import json
import re
from pathlib import Path

import pytest
from hybrid_agent.errors import ConfigError
from hybrid_agent.suite import SuiteTask, UnknownSuite, load_suite, load_tasks, tool_annotation
from osworld_mcp_env.data_paths import osworld_data
from osworld_mcp_env.errors import TaskNotFound


def test_bundled_and_seeded_tasks_are_annotated_by_their_tool_oracle():
    bundled = {t.task_id: t.tool_reachable for t in load_suite("bundled")}
    assert bundled == {"calc-sum-column": True, "writer-replace-word": False, "os-create-file": False}
    seeded = load_suite("seeded:test")
    assert all(isinstance(t.tool_reachable, bool) for t in seeded)
    assert 0 < sum(t.tool_reachable for t in seeded) < len(seeded)


def test_osworld_tasks_are_annotated_by_osworld_mcps_has_tool_list():
    folder = osworld_data().mcp_tasks
    listed = [i for ids in json.loads((folder / "test_all.json").read_text()).values() for i in ids]
    beneficial = {i for ids in json.loads((folder / "has_tool.json").read_text()).values() for i in ids}
    assert sum(tool_annotation(i) is True for i in listed) == len(beneficial) == 250
    assert sum(tool_annotation(i) is False for i in listed) == 111
    assert tool_annotation("not-a-task-of-any-list") is None


@pytest.mark.parametrize(
    ("spec", "size"),
    [
        ("osworld:test_all", 369),
        ("osworld:test_small", 39),
        ("osworld-mcp:has_tool", 250),
        ("osworld-mcp:test_all", 361),
        ("hybrid-routing-agent:test_all_no_internet", 309),
    ],
)
def test_the_shipped_splits_resolve_by_name_to_osworlds_task_files(spec: str, size: int):
    tasks = load_suite(spec)
    assert len(tasks) == len({t.task_id for t in tasks}) == size
    examples = osworld_data().examples
    assert all(Path(t.source).is_relative_to(examples) and Path(t.source).stem == t.task_id for t in tasks)
    assert all(Path(t.source).parent.name == t.domain for t in tasks)
    if spec == "osworld-mcp:has_tool":
        assert all(t.tool_reachable is True for t in tasks)


def test_an_unknown_named_split_lists_the_known_ones():
    with pytest.raises(
        ConfigError, match=r"No split 'test_al' from osworld: known are .*test_all, test_infeasible"
    ):
        load_suite("osworld:test_al")
    with pytest.raises(ConfigError, match=re.escape("No split '../x'")):
        load_suite("osworld-mcp:../x")


def test_a_seeded_instance_id_is_a_suite_of_one_annotated_by_its_template():
    assert load_suite("calc-column-sum@7") == [
        SuiteTask("calc-column-sum@7", "libreoffice_calc", "calc-column-sum@7", tool_reachable=True)
    ]
    assert tool_annotation("os-write-file@3") is False


def test_a_split_file_may_name_seeded_instances(tmp_path):
    split = tmp_path / "split.json"
    split.write_text(json.dumps({"os": ["os-write-file@3"]}))
    assert [(t.task_id, t.source) for t in load_suite(str(split))] == [("os-write-file@3", "os-write-file@3")]


def test_load_tasks_concatenates_specs_and_ids_and_names_unknown_ones():
    tasks = load_tasks(["bundled", "calc-column-sum@7"])
    assert [t.task_id for t in tasks] == [
        "calc-sum-column",
        "writer-replace-word",
        "os-create-file",
        "calc-column-sum@7",
    ]
    with pytest.raises(UnknownSuite, match=re.escape("Did you mean 'calc-sum-column'?")):
        load_tasks(["calc-sum-colum"])
    with pytest.raises(TaskNotFound, match=re.escape("Did you mean 'calc-column-sum'?")):
        load_tasks(["calc-colum-sum@7"], pass_unknown=True)  # a bad seeded id is never an env's own name
    assert load_tasks(["toy"], pass_unknown=True) == [SuiteTask("toy", "unknown", "toy")]
