"""Nautilus and gnome-terminal on the embedded desktop, as OSWorld's tasks start and read them.

Both are Debian's packages on the desktop's read-only system (``tools/setup_debian.sh``)
and run as the desktop user like any app a task launches. OSWorld task 2b9493d7 runs
end to end: its setup opens a document in Writer and starts gnome-terminal with its
own command (``DBUS_SESSION_BUS_ADDRESS`` set to ``/run/user/1000/bus``); its
postconfig kills ``gnome-terminal-server`` so that bash writes ``~/.bash_history``,
which the check reads. The document comes from the file cache; here a small docx
made by the test stands in for its 15 MB one (the check never reads it).
"""

from __future__ import annotations

import io
from pathlib import Path

import docx
import pytest
from osworld_mcp_env.evaluators import evaluate
from osworld_mcp_env.tasks import TaskContext, TaskRunConfig, read_task_file, run_setup
from osworld_mcp_env.tasks.cache import osworld_cache_name
from osworld_mcp_env.tasks.coverage import cache_urls
from polling import wait_until
from task_data import OSWORLD_EXAMPLES

pytestmark = pytest.mark.desktop


def _window(desktop, wm_class_part: str, title: str | None = None):
    return next(
        (w for w in desktop.windows() if wm_class_part in w.wm_class and (title is None or w.title == title)),
        None,
    )


def test_nautilus_opens_the_folder_a_task_names_as_the_desktop_user(desktop):
    desktop.execute(["mkdir", "-p", "/home/user/Documents/Finance"])
    desktop.launch(["nautilus", "/home/user/Documents/Finance"])  # 415ef462, f5c13cdd, ... launch it so
    window = wait_until(lambda: _window(desktop, "Nautilus", "Finance"), 60, "Nautilus's Finance window")
    assert window.wm_class.startswith("org.gnome.Nautilus")
    owners = desktop.execute("ps -o user= -C nautilus", shell=True).output.split()
    assert owners and set(owners) == {"user"}
    desktop.execute(["pkill", "-x", "nautilus"])


def test_gnome_terminal_task_2b9493d7_no_op_0_oracle_1(desktop, tmp_path: Path):
    path = next(OSWORLD_EXAMPLES.glob("multi_apps/2b9493d7-*.json"))
    task = read_task_file(path)
    [(url, name)] = cache_urls(task)
    stand_in = docx.Document()
    stand_in.add_paragraph("A document standing in for the task's 15 MB one.")
    data = io.BytesIO()
    stand_in.save(data)
    cache = tmp_path / "cache"
    (cache / task.id).mkdir(parents=True)
    (cache / task.id / osworld_cache_name(url, name)).write_bytes(data.getvalue())
    ctx = TaskContext(task.id, tmp_path / "work", TaskRunConfig(cache_roots=(cache,)))

    for oracle in (False, True):
        desktop.execute(["pkill", "-x", "soffice.bin"])
        run_setup(task, desktop, ctx)
        terminal = wait_until(lambda: _window(desktop, "gnome-terminal"), 60, "gnome-terminal's window")
        assert desktop.execute(["pgrep", "-x", "soffice.bin"]).returncode == 0
        if oracle:  # what the agent types into the terminal
            desktop.activate_window(terminal.title)
            typed = desktop.execute(["xdotool", "type", "--delay", "20", "pkill soffice\n"])
            assert typed.returncode == 0, typed.error
            wait_until(
                lambda: desktop.execute(["pgrep", "-x", "soffice.bin"]).returncode == 1, 60, "Writer to end"
            )
        result = evaluate(task, desktop, ctx)
        assert result.score == (1.0 if oracle else 0.0), result
        wait_until(
            lambda: _window(desktop, "gnome-terminal") is None, 60, "the postconfig to end the terminal"
        )
