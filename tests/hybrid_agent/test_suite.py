"""Suites carry the tasks' tool annotation, which Table 3's reachability reads."""

import json

import pytest
from hybrid_agent.suite import load_suite, tool_annotation
from osworld_mcp_env.data_paths import osworld_data


def test_bundled_and_seeded_tasks_are_annotated_by_their_tool_oracle():
    bundled = {t.task_id: t.tool_reachable for t in load_suite("bundled")}
    assert bundled == {"calc-sum-column": True, "writer-replace-word": False, "os-create-file": False}
    seeded = load_suite("seeded:test")
    assert all(isinstance(t.tool_reachable, bool) for t in seeded)
    assert 0 < sum(t.tool_reachable for t in seeded) < len(seeded)


def test_osworld_tasks_are_annotated_by_osworld_mcps_has_tool_list():
    folder = osworld_data().mcp_tasks
    if not (folder / "has_tool.json").exists():
        pytest.skip(osworld_data().missing(folder / "has_tool.json"))
    listed = [i for ids in json.loads((folder / "test_all.json").read_text()).values() for i in ids]
    beneficial = {i for ids in json.loads((folder / "has_tool.json").read_text()).values() for i in ids}
    assert sum(tool_annotation(i) is True for i in listed) == len(beneficial) == 250
    assert sum(tool_annotation(i) is False for i in listed) == 111
    assert tool_annotation("not-a-task-of-any-list") is None
