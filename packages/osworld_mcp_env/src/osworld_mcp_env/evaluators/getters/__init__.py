"""Getters with OSWorld's names: they fetch what a metric compares.

Importing this package registers every built-in getter. A getter returns None when
the agent's artefact does not exist (the check scores 0); anything else that stops
it raises :class:`~osworld_mcp_env.errors.EvaluationError`, which reports keep apart
from a 0 score.
"""

from osworld_mcp_env.evaluators.getters import (
    chrome,
    chrome_pages,
    desktop,
    files,
    gimp,
    impress,
    relative_time,
    vlc,
    vscode,
)

__all__ = ["chrome", "chrome_pages", "desktop", "files", "gimp", "impress", "relative_time", "vlc", "vscode"]
