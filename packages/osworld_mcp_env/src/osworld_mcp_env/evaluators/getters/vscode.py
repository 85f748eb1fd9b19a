"""VS Code getter ``vscode_config``: runs an extension's command from the palette, reads what it wrote.

OSWorld's VS Code tasks that need the workbench's own state (which folder is open)
install a small evaluation extension in their setup; its commands write that state to
a file. The getter does what OSWorld's does, with OSWorld's keys
(``vscode_extension_command``, ``path``, ``dest``): Ctrl+Shift+P, the command's name,
Return, in the focused window (the task's postconfig activates VS Code's), then the file.

Two differences make the check independent of timing and of what the agent left: the
file is removed first, so only what the extension writes now is read (an agent's own
``~/OpenProject.txt`` does not count), and the file is polled for instead of read after
OSWorld's fixed one-second sleep; a palette that did not take the keys (the workbench
still loading, a busy desktop) is closed and the command typed again.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from osworld_mcp_env.backends.base import Desktop
from osworld_mcp_env.errors import DesktopError, EvaluationError
from osworld_mcp_env.evaluators.getters.files import save_result, user_path
from osworld_mcp_env.evaluators.registry import register_getter
from osworld_mcp_env.tasks.context import TaskContext

PALETTE_TRIES = 3
WRITE_TIMEOUT_S = 8.0
POLL_INTERVAL_S = 0.2


def _gui(desktop: Desktop, action: str, **arguments: Any) -> None:
    desktop.gui({"action": action, "arguments": arguments})


def _read_when_written(desktop: Desktop, path: str) -> bytes | None:
    """The file once it exists, polled for up to ``WRITE_TIMEOUT_S``; None when it never appears."""
    deadline = time.monotonic() + WRITE_TIMEOUT_S
    while True:
        data = desktop.read_file(path)
        if data is not None or time.monotonic() >= deadline:
            return data
        time.sleep(POLL_INTERVAL_S)


@register_getter("vscode_config")
def vscode_config(desktop: Desktop, context: TaskContext, config: Mapping[str, Any], /) -> str | None:
    """Runs ``vscode_extension_command`` from VS Code's palette; copies ``path`` to ``<work_dir>/<dest>``.

    None when no run of the command wrote the file (no VS Code, no extension, no
    window focused): the check scores 0.
    """
    command = str(config["vscode_extension_command"])
    path = user_path(desktop, str(config["path"]))
    try:
        removed = desktop.execute(["rm", "-f", "--", path])
        if removed.returncode != 0:
            raise EvaluationError(f"vscode_config: cannot remove the old {path!r}: {removed.error!r}")
        for _ in range(PALETTE_TRIES):
            _gui(desktop, "key", keys=["ctrl", "shift", "p"])
            _gui(desktop, "type", text=command)
            _gui(desktop, "key", keys=["Return"])
            data = _read_when_written(desktop, path)
            if data is not None:
                return save_result(context, str(config["dest"]), data)
            _gui(desktop, "key", keys=["Escape"])
    except DesktopError as exc:
        raise EvaluationError(f"vscode_config: the desktop did not run {command!r}: {exc}") from exc
    return None
