"""Recorded GUI episodes in HybridCUA's grammar, terminal typing rewritten into direct commands, replayed.

:mod:`~hybrid_agent.rewrite.convert` (one GUI step as a pyautogui heredoc on the 0-999
grid), :mod:`~hybrid_agent.rewrite.terminal` (the rule that finds terminal typing and
reads its command back), :mod:`~hybrid_agent.rewrite.episode` (one episode in a mode),
:mod:`~hybrid_agent.rewrite.replay` (``hybrid-agent rewrite``: replay, keep, report).
"""

from hybrid_agent.rewrite.convert import grid_to_pixel, gui_parameters, pixel_to_grid
from hybrid_agent.rewrite.episode import Rewrite, RewriteMode, RewrittenStep, rewrite_episode
from hybrid_agent.rewrite.errors import RewriteError, RewriteReason
from hybrid_agent.rewrite.replay import (
    RewriteConfig,
    RewriteReport,
    plan_rewrites,
    replay_rewrites,
    rewrite_run,
)
from hybrid_agent.rewrite.terminal import SourceStep, TerminalRun, terminal_runs

__all__ = [
    "Rewrite",
    "RewriteConfig",
    "RewriteError",
    "RewriteMode",
    "RewriteReason",
    "RewriteReport",
    "RewrittenStep",
    "SourceStep",
    "TerminalRun",
    "grid_to_pixel",
    "gui_parameters",
    "pixel_to_grid",
    "plan_rewrites",
    "replay_rewrites",
    "rewrite_episode",
    "rewrite_run",
    "terminal_runs",
]
