"""Setup steps, getters and the bundled tasks on the real embedded desktop (``-m desktop``)."""

from __future__ import annotations

import io
import re
from pathlib import Path

import openpyxl
import pytest
from osworld_mcp_env.errors import SetupStepError
from osworld_mcp_env.evaluators import evaluate
from osworld_mcp_env.tasks import (
    SetupStep,
    TaskContext,
    TaskRunConfig,
    load_task,
    materialize_bundled_files,
    run_setup,
    run_steps,
)
from osworld_mcp_env.tasks.bundled import CALC_NUMBERS, writer_replace_word_files

pytestmark = pytest.mark.desktop


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("cache")
    materialize_bundled_files(root)
    return root


def ctx_for(task_id: str, cache: Path, tmp_path: Path) -> TaskContext:
    return TaskContext(task_id, tmp_path / "run", TaskRunConfig(cache_roots=(cache,), max_sleep_s=2.0))


def test_execute_step_fills_placeholders_and_writes_stdout_for_cache_file(desktop, tmp_path: Path):
    ctx = ctx_for("t", tmp_path, tmp_path)
    ctx.work_dir.mkdir(parents=True)
    step = SetupStep(
        "command", {"command": "echo {SCREEN_WIDTH}x{SCREEN_HEIGHT_HALF}", "shell": "true", "stdout": "o.txt"}
    )
    run_steps([step], desktop, ctx, phase="setup")
    w, h = desktop.screen_size
    assert (ctx.work_dir / "o.txt").read_text().strip() == f"{w}x{h // 2}"


def test_execute_until_retries_until_the_output_matches(desktop, tmp_path: Path):
    ctx = ctx_for("t", tmp_path, tmp_path)
    cmd = "n=$(cat /tmp/ctr 2>/dev/null || echo 0); n=$((n+1)); echo $n > /tmp/ctr; echo $n"
    run_steps(
        [SetupStep("execute", {"command": cmd, "shell": True, "until": {"stdout": "3"}})],
        desktop,
        ctx,
        phase="s",
    )
    assert desktop.execute("cat /tmp/ctr", shell=True).output.strip() == "3"


def test_download_uploads_the_cached_file(desktop, cache: Path, tmp_path: Path):
    url = "https://bundled.osworld-mcp-env.invalid/calc-sum-column/numbers.xlsx"
    ctx = ctx_for("calc-sum-column", cache, tmp_path)
    run_steps(
        [SetupStep("download", {"files": [{"url": url, "path": "/home/user/dl/n.xlsx"}]})],
        desktop,
        ctx,
        phase="s",
    )
    assert desktop.read_file("/home/user/dl/n.xlsx") == ctx.cache.resolve(url, ctx.task_id).read_bytes()


def test_download_of_an_uncached_url_fails_before_touching_the_desktop(desktop, tmp_path: Path):
    ctx = ctx_for("t", tmp_path / "empty", tmp_path)
    step = SetupStep("download", {"files": [{"url": "https://x.invalid/a.txt", "path": "/home/user/a.txt"}]})
    with pytest.raises(SetupStepError, match=re.escape("https://x.invalid/a.txt")):
        run_steps([step], desktop, ctx, phase="setup")
    assert desktop.read_file("/home/user/a.txt") is None


def test_window_and_launch_steps_the_guest_refuses_are_logged_not_fatal(desktop, tmp_path: Path, caplog):
    ctx = ctx_for("t", tmp_path, tmp_path)
    steps = [
        SetupStep("activate_window", {"window_name": "no such window"}),
        SetupStep("close_window", {"window_name": "no such window"}),
        SetupStep("launch", {"command": ["socat", "tcp-listen:9222,fork", "tcp:localhost:1337"]}),
    ]
    run_steps(steps, desktop, ctx, phase="setup")  # OSWorld's controller logs these and goes on
    assert sum("setup goes on" in r.message for r in caplog.records) == 3


def test_vm_getters_read_files_and_command_output(desktop, tmp_path: Path):
    task = load_task(
        {
            "id": "t",
            "instruction": "x",
            "config": [],
            "evaluator": {
                "func": ["exact_match", "check_include_exclude", "check_include_exclude"],
                "result": [
                    {"type": "vm_command_line", "command": "printf hi", "shell": True},
                    {"type": "vm_command_error", "command": "ls /nonexistent-dir", "shell": True},
                    {"type": "vm_file", "path": "/home/user/never-saved.txt", "dest": "n.txt"},
                ],
                "expected": [
                    {"type": "rule", "rules": {"expected": "hi"}},
                    {"type": "rule", "rules": {"include": ["nonexistent-dir"]}},
                    {"type": "rule", "rules": {"include": [""]}},
                ],
            },
        }
    )
    verdict = evaluate(task, desktop, ctx_for("t", tmp_path, tmp_path))
    assert [c.score for c in verdict.checks] == [1.0, 1.0, 0.0]
    assert verdict.checks[2].result_missing


def test_calc_task_scores_zero_untouched_and_one_with_the_gold_file(desktop, cache: Path, tmp_path: Path):
    task = load_task("calc-sum-column")
    ctx = ctx_for(task.id, cache, tmp_path)
    run_setup(task, desktop, ctx)
    assert any("numbers.xlsx" in w.title for w in desktop.windows())
    assert evaluate(task, desktop, ctx).score == 0.0
    wb = openpyxl.Workbook()
    for n in CALC_NUMBERS:
        wb.active.append([n])
    wb.active["B1"] = sum(CALC_NUMBERS)
    buf = io.BytesIO()
    wb.save(buf)
    desktop.upload_file("/home/user/numbers.xlsx", buf.getvalue())
    assert evaluate(task, desktop, ctx).score == 1.0


def test_writer_task_scores_one_with_the_gold_file(desktop, cache: Path, tmp_path: Path):
    task = load_task("writer-replace-word")
    ctx = ctx_for(task.id, cache, tmp_path)
    run_setup(task, desktop, ctx)
    assert evaluate(task, desktop, ctx).score == 0.0
    gold = next(v for k, v in writer_replace_word_files().items() if k.endswith("_gold.docx"))
    desktop.upload_file("/home/user/report.docx", gold)
    assert evaluate(task, desktop, ctx).score == 1.0


def test_os_task_scores_by_the_file_content(desktop, cache: Path, tmp_path: Path):
    task = load_task("os-create-file")
    ctx = ctx_for(task.id, cache, tmp_path)
    run_setup(task, desktop, ctx)
    assert evaluate(task, desktop, ctx).score == 0.0
    desktop.execute(
        "mkdir -p /home/user/projects && printf 'Hello World\\n' > /home/user/projects/hello.txt", shell=True
    )
    assert evaluate(task, desktop, ctx).score == 0.0
    desktop.execute("printf 'Hello OSWorld\\n' > /home/user/projects/hello.txt", shell=True)
    assert evaluate(task, desktop, ctx).score == 1.0
