"""Where the public OSWorld data lives: shipped in this package, ``OSWORLD_DATA_DIR`` to use another copy.

OSWorld's task JSONs and splits, OSWorld-MCP's task lists and tool schemas and the
reference study's splits and tool registry are copied, unmodified, from their public
repositories into ``public_data/`` (provenance, commits and licence in its
``NOTICE.md``). The env's episodes never need them; the coverage report, ``tasks fetch``,
OSWorld suites, the compatibility tests and the context benchmark read them. They all
find them here, so a newer upstream snapshot is one variable away. Call
:func:`osworld_data` where the program starts (a CLI, a test module) and pass the result down.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

DATA_DIR_VARIABLE = "OSWORLD_DATA_DIR"
SHIPPED_DATA_DIR = Path(__file__).resolve().parent / "public_data"
"""Used when ``OSWORLD_DATA_DIR`` is unset or empty: the copy inside this package."""


@dataclass(frozen=True)
class OSWorldData:
    """The public data's folders, all under one root.

    Attributes:
        root: The folder that holds ``OSWorld/``, ``OSWorld-MCP/`` and ``hybrid-routing-agent/``.
    """

    root: Path

    @property
    def splits(self) -> Path:
        """OSWorld's split files (``test_all.json``...): ``OSWorld/evaluation_examples``."""
        return self.root / "OSWorld" / "evaluation_examples"

    @property
    def examples(self) -> Path:
        """OSWorld's task JSONs, ``examples/<domain>/<id>.json``."""
        return self.splits / "examples"

    @property
    def tools_registry(self) -> Path:
        """The reference study's 120-tool ``tools_registry.json``."""
        return self.root / "hybrid-routing-agent" / "tools" / "tools_registry.json"

    @property
    def mcp_apis(self) -> Path:
        """OSWorld-MCP's tool schemas (OpenAI function format), one folder per group."""
        return self.root / "OSWorld-MCP" / "mcp" / "mcp_server" / "tools" / "apis"

    @property
    def mcp_tasks(self) -> Path:
        """OSWorld-MCP's task lists: ``test_all.json`` (361), ``has_tool.json`` (250 tool-beneficial)."""
        return self.root / "OSWorld-MCP" / "evaluation_examples"

    @property
    def study_splits(self) -> Path:
        """The reference study's splits: ``test_all_no_internet.json`` (309), its train and held-out sets."""
        return self.root / "hybrid-routing-agent" / "OSWorld-main" / "evaluation_examples"

    def split_folders(self) -> dict[str, Path]:
        """Where each source's split files lie, by the prefix that names them (``osworld:test_all``)."""
        return {
            "osworld": self.splits,
            "osworld-mcp": self.mcp_tasks,
            "hybrid-routing-agent": self.study_splits,
        }

    def missing(self, path: Path) -> str:
        """Why ``path`` cannot be read, naming the setting: for skip reasons and error messages."""
        return (
            f"{path} not found: set {DATA_DIR_VARIABLE} to the public OSWorld data folder (now {self.root})"
        )


def osworld_data(environ: Mapping[str, str] | None = None) -> OSWorldData:
    """The data folders from ``OSWORLD_DATA_DIR`` (default :data:`SHIPPED_DATA_DIR`).

    Args:
        environ: The environment to read; ``os.environ`` when None.
    """
    env = os.environ if environ is None else environ
    return OSWorldData(Path(env.get(DATA_DIR_VARIABLE) or SHIPPED_DATA_DIR))
