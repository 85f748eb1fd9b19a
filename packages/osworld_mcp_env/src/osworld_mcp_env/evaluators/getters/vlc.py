"""VLC getters: the user's ``vlcrc`` and what VLC's HTTP interface reports it plays.

The desktop's ``vlc`` starts VLC with its HTTP interface on ``127.0.0.1:8080``,
password ``password`` (``guest/bin/vlc``, OSWorld's convention). The host cannot
reach the sandbox's loopback, so the status is fetched with ``curl`` run inside the
desktop as the user, the way an agent's own request would go.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from osworld_mcp_env.backends.base import Desktop
from osworld_mcp_env.errors import DesktopError, EvaluationError
from osworld_mcp_env.evaluators.getters.files import save_result, user_path, vm_file
from osworld_mcp_env.evaluators.registry import register_getter
from osworld_mcp_env.tasks.context import TaskContext

VLC_CONFIG = "~/.config/vlc/vlcrc"
VLC_STATUS_URL = "http://127.0.0.1:8080/requests/status.xml"
VLC_HTTP_PASSWORD = "password"
STATUS_TIMEOUT_S = 10


@register_getter("vlc_config")
def vlc_config(desktop: Desktop, context: TaskContext, config: Mapping[str, Any], /) -> str | None:
    """Copies the user's ``~/.config/vlc/vlcrc`` to ``<work_dir>/<dest>``; None when there is none."""
    return vm_file(desktop, context, {"path": user_path(desktop, VLC_CONFIG), "dest": config["dest"]})


@register_getter("vlc_playing_info")
def vlc_playing_info(desktop: Desktop, context: TaskContext, config: Mapping[str, Any], /) -> str | None:
    """Saves VLC's ``status.xml`` to ``<work_dir>/<dest>``; None when no VLC answers.

    OSWorld raises when the request fails (no VLC running); here that is the agent's
    missing artefact, a 0.
    """
    command = [
        "curl", "--silent", "--fail", "--max-time", str(STATUS_TIMEOUT_S),
        "--user", f":{VLC_HTTP_PASSWORD}", VLC_STATUS_URL,
    ]  # fmt: skip
    try:
        done = desktop.execute(command, timeout=STATUS_TIMEOUT_S + 5)
    except DesktopError as exc:
        raise EvaluationError(f"vlc_playing_info: the desktop did not run curl: {exc}") from exc
    if done.returncode != 0 or not done.output:
        return None
    return save_result(context, config["dest"], done.output.encode())
