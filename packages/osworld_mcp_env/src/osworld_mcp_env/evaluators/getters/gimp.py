"""GIMP getters: a file of the user's GIMP 2.10 profile (``gimprc``, ``sessionrc``, ...)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from osworld_mcp_env.backends.base import Desktop
from osworld_mcp_env.errors import DesktopError, EvaluationError
from osworld_mcp_env.evaluators.getters.files import save_result, user_path
from osworld_mcp_env.evaluators.registry import register_getter
from osworld_mcp_env.tasks.context import TaskContext

GIMP_PROFILE = "~/.config/GIMP/2.10"


@register_getter("gimp_config_file")
def gimp_config_file(desktop: Desktop, context: TaskContext, config: Mapping[str, Any], /) -> str | None:
    """Copies ``~/.config/GIMP/2.10/<file_name>`` to ``<work_dir>/<dest>``.

    None when the file is missing or empty (OSWorld's ``if not content``): GIMP writes
    ``gimprc`` and ``sessionrc`` when it quits, so a GIMP that never quit leaves none.
    """
    path = user_path(desktop, f"{GIMP_PROFILE}/{config['file_name']}")
    try:
        data = desktop.read_file(path)
    except DesktopError as exc:
        raise EvaluationError(f"gimp_config_file: cannot read {path!r} from the desktop: {exc}") from exc
    return save_result(context, config["dest"], data) if data else None
