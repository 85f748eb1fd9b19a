"""Where the public OSWorld data lives: one setting, ``OSWORLD_DATA_DIR``, for tests, tools and benchmarks.

The data is not part of any package: OSWorld's task JSONs and splits, OSWorld-MCP's
tool schemas and the reference study's tool registry, copied from their public
repositories into one folder. The env never needs it; the compatibility tests, the
coverage report and the context benchmark read it. They all find it here, so moving
the folder means setting one variable. Call :func:`osworld_data` where the program
starts (a CLI, a test module) and pass the result down.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

DATA_DIR_VARIABLE = "OSWORLD_DATA_DIR"
DEFAULT_DATA_DIR = Path("/work/shared/osworld-data")
"""Used when ``OSWORLD_DATA_DIR`` is unset or empty: where this project's machines keep the data."""


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

    def missing(self, path: Path) -> str:
        """Why ``path`` cannot be read, naming the setting: for skip reasons and error messages."""
        return (
            f"{path} not found: set {DATA_DIR_VARIABLE} to the public OSWorld data folder (now {self.root})"
        )


def osworld_data(environ: Mapping[str, str] | None = None) -> OSWorldData:
    """The data folders from ``OSWORLD_DATA_DIR`` (default :data:`DEFAULT_DATA_DIR`).

    Args:
        environ: The environment to read; ``os.environ`` when None.
    """
    env = os.environ if environ is None else environ
    return OSWorldData(Path(env.get(DATA_DIR_VARIABLE) or DEFAULT_DATA_DIR))
