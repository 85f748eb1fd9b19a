"""A directory walk that stops after a bounded number of entries.

``root_dir="/"`` is a valid argument for every tool that searches a tree, and a
search that matches nothing visits every entry under it. :class:`TreeWalk` is
``os.walk`` (top-down, so callers may prune ``dirs`` in place; links not followed;
unreadable folders skipped) with a budget of entries; the tool reports that it
stopped early instead of running for minutes.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path


class TreeWalk:
    """``os.walk(root)`` that ends once ``max_entries`` files and folders have been listed.

    Attributes:
        visited: Entries listed so far.
        truncated: Whether the walk stopped at the budget (folders were left unvisited).
    """

    def __init__(self, root: Path, max_entries: int) -> None:
        self.root = root
        self.max_entries = max_entries
        self.visited = 0
        self.truncated = False

    def __iter__(self) -> Iterator[tuple[str, list[str], list[str]]]:
        for folder, dirs, files in os.walk(self.root):
            self.visited += len(dirs) + len(files)
            if self.visited > self.max_entries:
                self.truncated = True
                return
            yield folder, dirs, files

    def note(self) -> str:
        """A sentence for the tool's message when the walk stopped early, else ``""``."""
        if not self.truncated:
            return ""
        return (
            f" The search stopped after {self.max_entries} entries under {self.root}, "
            "so there may be more: narrow the folder."
        )
