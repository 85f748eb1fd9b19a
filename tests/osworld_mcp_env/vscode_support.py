"""Driving VS Code (code-server in a Chromium app window) on the embedded desktop as a user does.

Shared by the VS Code desktop tests: keys go to the focused window through xdotool, and
every step waits on what the window or a file shows, never on a guessed sleep.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable
from pathlib import Path

from osworld_mcp_env.backends.base import Desktop
from osworld_mcp_env.evaluators import evaluate
from osworld_mcp_env.guest.wire import WindowInfo
from osworld_mcp_env.tasks import TaskContext, TaskRunConfig, read_task_file, run_setup
from polling import wait_until
from task_data import OSWORLD_EXAMPLES

CODE_SERVER = Path("/usr/local/lib/code-server/node_modules/code-server/out/node/entry.js")


def vs_code_window(desktop: Desktop, title_part: str = "Visual Studio Code") -> WindowInfo | None:
    """The VS Code window whose title holds ``title_part``, or None."""
    return next(
        (w for w in desktop.windows() if title_part in w.title and w.title.endswith("Visual Studio Code")),
        None,
    )


def keys(desktop: Desktop, *names: str) -> None:
    done = desktop.execute(["xdotool", "key", "--delay", "60", *names])
    assert done.returncode == 0, done.error


def type_text(desktop: Desktop, text: str) -> None:
    done = desktop.execute(["xdotool", "type", "--delay", "40", text])
    assert done.returncode == 0, done.error


def fresh_vs_code(desktop: Desktop) -> None:
    """The episode-start desktop: no VS Code running, VS Code's user folders empty, as on OSWorld's snapshot.

    A restart, not a kill and ``rm``: the home keeps ``~/.config/Code/User``, which some tasks'
    setups write into before VS Code ever ran (982d12a5's theme). Once loaded, a first start
    opens code-server's walkthrough (unless a file is opened).
    """
    desktop.restart()


def run_command(desktop: Desktop, command: str, title_part: str, *, below: int = 0, tries: int = 3) -> None:
    """Runs a command from VS Code's palette until the window's title shows its editor.

    The palette takes keys only once the workbench has bound them; nothing on screen says
    when, so a palette that did not open is closed and opened again. ``below``: the
    command is that many entries below the palette's first match, counted once the list has
    been filtered (the desktop settled: under load a Down could land on an unfiltered list).
    """
    for _ in range(tries):
        keys(desktop, "ctrl+shift+p")
        type_text(desktop, command)
        desktop.settle()
        keys(desktop, *["Down"] * below, "Return")
        try:
            wait_until(lambda: vs_code_window(desktop, title_part), 30, f"{title_part} in the editor")
            return
        except TimeoutError:
            keys(desktop, "Escape")
    raise TimeoutError(f"VS Code did not run {command!r}")


def click_into_editor(desktop: Desktop, title_part: str) -> None:
    """Clicks the middle of the editor area so that keys go to the text, not to Chromium.

    Under load the focus can stay outside the editor after a command opened it; Ctrl+S
    there opens Chromium's "Save page" dialog instead of saving the file.
    """
    window = wait_until(lambda: vs_code_window(desktop, title_part), 30, f"{title_part} in a window")
    desktop.activate_window(window.title)
    x, y = window.x + window.width * 3 // 5, window.y + window.height // 2
    done = desktop.execute(["xdotool", "mousemove", "--sync", str(x), str(y), "click", "1"])
    assert done.returncode == 0, done.error


def save(desktop: Desktop, title_part: str, path: str, saved: Callable[[str], bool], tries: int = 2) -> None:
    """Presses Ctrl+S in the editor until ``saved`` holds for ``path``'s text.

    A Ctrl+S that reached Chromium instead (its "Save page" dialog) is escaped, and the
    editor clicked into before the next try.
    """
    for _ in range(tries):
        keys(desktop, "ctrl+s")
        try:
            wait_until(lambda: saved(desktop.execute(["cat", path]).output), 60, f"{path} saved")
            return
        except TimeoutError:
            # Said, so that a run shows how often a try was lost.
            warnings.warn(f"Ctrl+S did not save {path}; escaping and clicking into the editor", stacklevel=2)
            keys(desktop, "Escape")
            click_into_editor(desktop, title_part)
    raise TimeoutError(f"VS Code did not save {path}")


def type_json_and_save(desktop: Desktop, title_part: str, path: str, text: str, tries: int = 2) -> None:
    """Types the JSON ``text`` over everything in the editor and saves it, until the file holds it.

    VS Code closes brackets and quotes as they are typed and types over them again. The
    editor is clicked into first, and the whole step runs again if the file does not
    read back as ``text``'s JSON.
    """
    want = json.loads(text)

    def holds(content: str) -> bool:
        try:
            return bool(json.loads(content) == want)
        except ValueError:
            return False

    for _ in range(tries):
        click_into_editor(desktop, title_part)
        keys(desktop, "ctrl+a", "Delete")
        type_text(desktop, text)
        try:
            save(desktop, title_part, path, holds, tries=1)
            return
        except TimeoutError:
            warnings.warn(f"{path} did not read back as the JSON typed; typing it again", stacklevel=2)
    raise TimeoutError(f"VS Code did not save {text!r} to {path}")


def solve_through_a_json_editor(
    desktop: Desktop, tmp_path: Path, task_id: str, command: str, text: str, file: str, below: int = 0
) -> None:
    """No-op then oracle of a VS Code task: opens the JSON file with ``command``, types ``text``, saves.

    The untouched setup must score 0 and the saved file 1. An editor that did not take the
    text (the palette's read-only default shortcuts opened instead, keys lost under load)
    is left behind: the command opens and focuses the file again, once.
    """
    task = read_task_file(next(OSWORLD_EXAMPLES.glob(f"vs_code/{task_id}-*.json")))
    ctx = TaskContext(task.id, tmp_path / "work", TaskRunConfig())
    fresh_vs_code(desktop)
    run_setup(task, desktop, ctx)
    window = wait_until(lambda: vs_code_window(desktop, "Walkthrough"), 180, "VS Code's workbench")
    assert evaluate(task, desktop, ctx).score == 0.0

    desktop.activate_window(window.title)
    saved = f"/home/user/.config/Code/User/{file}"
    for attempt in range(2):
        run_command(desktop, command, file, below=below)
        try:
            type_json_and_save(desktop, file, saved, text)
            break
        except TimeoutError:
            if attempt:
                raise
            warnings.warn(f"{file} did not take the text; running {command!r} again", stacklevel=2)
    result = evaluate(task, desktop, ctx)
    assert result.score == 1.0, (result, desktop.execute(["cat", saved]).output)
