"""Chromium getters: the user's bookmarks.

The desktop's ``google-chrome`` is Chromium (``guest/bin/google-chrome``), so its
profile is Chromium's, ``~/.config/chromium/Default``, where OSWorld's Ubuntu VM reads
``~/.config/google-chrome/Default`` (its ARM VM reads snap Chromium's, the same way).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from osworld_mcp_env.backends.base import Desktop
from osworld_mcp_env.errors import DesktopError, EvaluationError
from osworld_mcp_env.evaluators.getters.files import user_path
from osworld_mcp_env.evaluators.registry import ZeroScore, register_getter
from osworld_mcp_env.tasks.context import TaskContext

CHROMIUM_PROFILE = "~/.config/chromium/Default"


@register_getter("bookmarks")
def bookmarks(desktop: Desktop, context: TaskContext, config: Mapping[str, Any], /) -> Any:
    """The ``roots`` of the profile's ``Bookmarks`` JSON; ``[]`` when there is no file yet.

    Chromium writes the file after the first bookmark change, so an empty list is
    "no bookmarks", which the metric scores 0.
    """
    path = user_path(desktop, f"{CHROMIUM_PROFILE}/Bookmarks")
    try:
        data = desktop.read_file(path)
    except DesktopError as exc:
        raise EvaluationError(f"bookmarks: cannot read {path!r} from the desktop: {exc}") from exc
    if not data:
        return []
    try:
        return json.loads(data).get("roots", {})
    except (ValueError, AttributeError) as exc:
        raise ZeroScore(f"bookmarks: {path} is not a JSON object (OSWorld raises): {exc}") from exc
