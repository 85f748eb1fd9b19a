"""The coverage report over OSWorld's 369 task JSONs, and the ``osworld-mcp tasks --coverage`` CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from osworld_mcp_env.cli import main
from osworld_mcp_env.tasks.cache import osworld_cache_name
from osworld_mcp_env.tasks.coverage import NEEDS_CACHE, RUNNABLE, assess, coverage
from task_data import OSWORLD_EXAMPLES, needs_osworld_data


@needs_osworld_data
def test_every_osworld_json_loads_and_gets_one_verdict():
    report = coverage([OSWORLD_EXAMPLES])
    assert len(report.items) == 369
    assert all(item.loads for item in report.items)
    assert all(item.status in (RUNNABLE, NEEDS_CACHE, "unsupported") for item in report.items)
    assert all(item.reason for item in report.items if item.status == "unsupported")
    by_domain = report.by_domain()
    # VS Code is not in the embedded desktop: none of its 23 tasks can run.
    assert {i.status for i in by_domain["vs_code"]} == {"unsupported"}
    # Without a file cache, every task that downloads is "needs file cache", never runnable.
    assert all(i.status != RUNNABLE or not i.detail for i in report.items)
    assert sum(i.status == RUNNABLE for i in by_domain["os"]) >= 10


def write_task(folder: Path, task_id: str, **evaluator) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{task_id}.json"
    config = [
        {
            "type": "download",
            "parameters": {"files": [{"url": "https://x.invalid/a.xlsx", "path": "/home/user/a.xlsx"}]},
        }
    ]
    ev = {
        "func": "exact_match",
        "result": {"type": "rule", "rules": "a"},
        "expected": {"type": "rule", "rules": {"expected": "a"}},
    }
    path.write_text(
        json.dumps({"id": task_id, "instruction": "x", "config": config, "evaluator": {**ev, **evaluator}})
    )
    return path


def test_a_download_is_runnable_once_the_cache_holds_it(tmp_path: Path):
    path = write_task(tmp_path / "examples" / "os", "t1")
    miss = assess(path)
    assert miss.status == NEEDS_CACHE and "https://x.invalid/a.xlsx" in miss.detail
    cache = tmp_path / "cache"
    (cache / "t1").mkdir(parents=True)
    (cache / "t1" / osworld_cache_name("https://x.invalid/a.xlsx", "a.xlsx")).write_bytes(b"x")
    assert coverage([tmp_path / "examples"], [cache]).items[0].status == RUNNABLE


def test_unknown_names_are_the_reason(tmp_path: Path):
    path = write_task(tmp_path / "os", "t2", func="no_such_metric")
    verdict = assess(path)
    assert verdict.status == "unsupported" and verdict.reason == "unknown metric 'no_such_metric'"


def test_cli_prints_the_table_and_lists(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    write_task(tmp_path / "examples" / "os", "t3", func="no_such_metric")
    assert (
        main(["tasks", "--coverage", "--examples", str(tmp_path / "examples"), "--list", "unsupported"], {})
        == 0
    )
    out = capsys.readouterr().out
    assert "os" in out and "unknown metric 'no_such_metric'" in out and "os/t3\tunsupported" in out
    # No folder given and no OSWORLD_EXAMPLES: a usage error, not a crash.
    assert main(["tasks", "--coverage"], {}) == 2


def test_what_the_desktop_lacks_is_the_reason_unless_the_task_is_infeasible(tmp_path: Path):
    clock = {"type": "vm_command_line", "command": "timedatectl status"}
    path = write_task(tmp_path / "os", "t4", result=clock)
    assert assess(path).reason == "the embedded desktop lacks systemd (timedatectl)"
    sudo = {"type": "vm_command_line", "command": "echo {CLIENT_PASSWORD} | sudo -S ls", "shell": True}
    assert "sudo" in assess(write_task(tmp_path / "os", "t5", result=sudo)).reason
    # An infeasible task is scored on the declaration alone: its setup's needs do not matter.
    infeasible = json.loads(path.read_text())
    infeasible["evaluator"] = {"func": "infeasible"}
    infeasible["config"] = [{"type": "execute", "parameters": {"command": "sudo ls", "shell": True}}]
    path.write_text(json.dumps(infeasible))
    assert assess(path).status == RUNNABLE


def test_a_url_in_the_instruction_needs_the_internet(tmp_path: Path):
    path = write_task(tmp_path / "vlc", "t6")
    task = json.loads(path.read_text())
    task["instruction"] = "Stream https://example.com/live.m3u8 in VLC."
    path.write_text(json.dumps(task))
    assert assess(path).reason == "website on the internet (a url in the instruction)"
