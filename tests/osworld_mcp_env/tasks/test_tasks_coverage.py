"""The coverage report over OSWorld's 369 task JSONs, and the ``osworld-mcp tasks --coverage`` CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from osworld_mcp_env.cli import main
from osworld_mcp_env.tasks.cache import osworld_cache_name
from osworld_mcp_env.tasks.corpus import OSWORLD_2026_04, corpus_version
from osworld_mcp_env.tasks.coverage import (
    NEEDS_CACHE,
    RUNNABLE,
    RUNNABLE_WITH_CACHE,
    RUNNABLE_WITH_INTERNET,
    STATUSES,
    DesktopKind,
    assess,
    coverage,
    task_files,
)
from task_data import OSWORLD_EXAMPLES


def test_every_osworld_json_loads_and_gets_one_verdict():
    report = coverage([OSWORLD_EXAMPLES])
    assert len(report.items) == 369
    assert all(item.loads for item in report.items)
    assert all(item.status in STATUSES for item in report.items)
    assert all(item.reason for item in report.items if item.status == "unsupported")
    by_domain = report.by_domain()
    # VS Code is code-server there: 17 of its 23 tasks run (the rest: Marketplace extensions).
    assert sum(i.status != "unsupported" for i in by_domain["vs_code"]) == 17
    # Without a file cache, every task that downloads is "needs file cache", never runnable.
    assert not any(i.status == RUNNABLE_WITH_CACHE for i in report.items)
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
    assert coverage([tmp_path / "examples"], [cache]).items[0].status == RUNNABLE_WITH_CACHE


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
    # OSWORLD_DATA_DIR naming a folder without task files: a usage error, not a crash.
    assert main(["tasks", "--coverage"], {"OSWORLD_DATA_DIR": str(tmp_path / "nowhere")}) == 2
    assert "not a folder: " + str(tmp_path / "nowhere") in capsys.readouterr().err


def test_cli_reports_the_shipped_corpus_when_no_folder_is_given(capsys: pytest.CaptureFixture[str]):
    assert main(["tasks", "--coverage"], {}) == 0
    out = capsys.readouterr().out
    total = next(line for line in out.splitlines() if line.startswith("total"))
    assert total.split()[1:3] == ["369", "369"]  # tasks, loads
    assert "sha256:d056aea097eba2f7d0a46aae4859896863236b633d5f38d7545c9c3cbc2168ee" in out


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


def test_vs_code_tasks_run_on_the_embedded_desktop_except_marketplace_extensions():
    """code-server is VS Code there; a task that installs or checks a Marketplace extension is left out."""
    embedded = coverage([OSWORLD_EXAMPLES])
    reasons = {i.path.stem[:8]: i.reason for i in embedded.items if i.domain in ("vs_code", "multi_apps")}
    assert "Marketplace" in reasons["57242fad"]  # is_extension_installed
    assert "Marketplace" in reasons["e2b5e914"]  # code --install-extension ms-python.python in its setup
    assert reasons["276cc624"] == ""  # a setting: runs (tests/.../test_vscode_desktop.py)
    # vscode_config: its .vsix installs from the cache (test_vscode_tasks_offline_desktop.py).
    assert reasons["53ad5833"] == reasons["510f64c8"] == ""
    assert sum("Marketplace" in i.reason for i in embedded.items) == 7
    image = coverage([OSWORLD_EXAMPLES], desktop=DesktopKind.OSWORLD_IMAGE)
    vs_code = image.by_domain()["vs_code"]
    assert not any("VS Code" in i.reason for i in image.items)
    assert sum(i.status == RUNNABLE for i in vs_code) >= 9
    assert sum(i.status in (RUNNABLE, NEEDS_CACHE) for i in vs_code) >= 18
    # What the image ships (sudo, Nautilus, ...) is no reason there either; the internet still is.
    assert not any("embedded desktop lacks" in i.reason for i in image.items)
    assert image.reasons()["website on the internet (chrome_open_tabs)"] == 46
    assert "Ubuntu.qcow2 on the libvirt backend" in image.table()


def test_a_marketplace_extension_task_is_unsupported_here_and_runnable_on_the_image(tmp_path: Path):
    path = write_task(tmp_path / "vs_code", "t7")
    assert assess(path).status == NEEDS_CACHE  # a plain VS Code task
    rule = {"type": "rule", "rules": {"type": "contain", "expected": "ms-python.python"}}
    path = write_task(tmp_path / "vs_code", "t8", func="is_extension_installed", expected=rule)
    assert assess(path).reason.startswith("VS Code extensions from Microsoft's Marketplace")
    assert assess(path, desktop=DesktopKind.OSWORLD_IMAGE).status == NEEDS_CACHE


def test_the_report_names_the_corpus_revision(tmp_path: Path):
    files = task_files([OSWORLD_EXAMPLES])
    version = corpus_version(files)
    assert version.files == 369 and version.statement == OSWORLD_2026_04
    header = coverage([OSWORLD_EXAMPLES]).table().split("\ndesktop: ", 1)[0]
    assert header == version.line() and "OSWorld-Verified task set" in " ".join(header.split())
    # One byte changed in one task: another revision, and the report says it does not know it.
    changed = tmp_path / "examples"
    for f in files:
        (changed / f.parent.name).mkdir(parents=True, exist_ok=True)
        (changed / f.parent.name / f.name).write_bytes(f.read_bytes())
    first = changed / files[0].parent.name / files[0].name
    first.write_bytes(first.read_bytes() + b"\n")
    other = corpus_version(task_files([changed]))
    assert other.files == 369 and other.statement is None and other.fingerprint != version.fingerprint
    assert "unknown revision" in " ".join(other.line().split())


def test_a_website_task_counts_as_runnable_with_internet_once_its_names_are_implemented(tmp_path: Path):
    path = write_task(tmp_path / "examples" / "chrome", "t8")
    task = json.loads(path.read_text())
    task["config"].append(
        {"type": "chrome_open_tabs", "parameters": {"urls_to_open": ["https://example.com"]}}
    )
    path.write_text(json.dumps(task))
    # Like "needs file cache", it counts before the cache is fetched, naming what is missing.
    offline = assess(path)
    assert offline.reason == "website on the internet (chrome_open_tabs)" and offline.with_internet
    assert offline.detail == "https://x.invalid/a.xlsx"
    cache = tmp_path / "cache"
    (cache / "t8").mkdir(parents=True)
    (cache / "t8" / osworld_cache_name("https://x.invalid/a.xlsx", "a.xlsx")).write_bytes(b"x")
    report = coverage([tmp_path / "examples"], [cache])
    assert report.items[0].status == "unsupported" and report.items[0].with_internet
    assert report.items[0].detail == ""
    lines = report.table().splitlines()
    assert next(line for line in lines if line.startswith("domain")).endswith(RUNNABLE_WITH_INTERNET)
    assert next(line for line in lines if line.startswith("chrome")).split()[-2:] == ["1", "1"]
    # An online account or an unimplemented name stays unsupported with internet too.
    task["config"].append({"type": "googledrive", "parameters": {}})
    path.write_text(json.dumps(task))
    assert not coverage([tmp_path / "examples"], [cache]).items[0].with_internet
    task["config"].pop()
    task["evaluator"]["func"] = "no_such_metric"
    path.write_text(json.dumps(task))
    assert not coverage([tmp_path / "examples"], [cache]).items[0].with_internet


def test_cli_names_the_evaluators_extra_when_a_metric_library_is_missing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    import osworld_mcp_env.cli as cli

    def without_lxml(*args: object, **kwargs: object) -> None:
        raise ModuleNotFoundError("No module named 'lxml'")

    monkeypatch.setattr(cli, "coverage", without_lxml)
    assert main(["tasks", "--coverage"], {}) == 2
    err = capsys.readouterr().err
    assert "osworld-mcp-env[evaluators]" in err and "lxml" in err


def test_the_epub_task_stays_unsupported_with_internet():
    """42d25c08 opens websites, but internet mode would not make it doable: compare_epub is why."""
    report = coverage([OSWORLD_EXAMPLES])
    epub = next(i for i in report.items if i.path.stem.startswith("42d25c08"))
    assert epub.status == "unsupported" and epub.reason == "website on the internet (chrome_open_tabs)"
    assert not epub.with_internet
    assert sum(i.with_internet for i in report.by_domain()["multi_apps"]) == 21
