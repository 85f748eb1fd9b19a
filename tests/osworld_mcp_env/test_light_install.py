"""``pip install osworld-mcp-env`` without extras is the interface the agent and the trainer use.

The distributions of the ``desktop`` extra (its closure, less what the base install needs anyway)
are found from the installed metadata; a fresh interpreter that cannot import any of their modules
must still import the interface, list the bundled tasks and templates, and import the agent's
parsing and context code; importing the env itself must then say which extra to install.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = ROOT / "packages/osworld_mcp_env/pyproject.toml"

INTERFACE = (
    "osworld_mcp_env.actions",
    "osworld_mcp_env.spaces",
    "osworld_mcp_env.info",
    "osworld_mcp_env.errors",
    "osworld_mcp_env.registry",
    "osworld_mcp_env.text",
    "osworld_mcp_env.tasks",
    "osworld_mcp_env.tasks.templates",
    "osworld_mcp_env.mcp_host.apps",
    "osworld_mcp_env.mcp_host.namespaces",
    "osworld_mcp_env.backends.base",
)
AGENT = ("hybrid_agent.agent_loop", "hybrid_agent.parse", "hybrid_agent.context", "hybrid_agent.adapters")


def _name(requirement: str) -> str:
    return re.sub(r"[-_.]+", "-", Requirement(requirement).name).lower()


def _closure(requirements: list[str], extras: set[str] = frozenset()) -> set[str]:
    """Installed distributions reached from ``requirements`` (markers for ``extras`` honoured)."""
    seen: set[str] = set()
    todo = [(r, extras) for r in requirements]
    while todo:
        text, active = todo.pop()
        req = Requirement(text)
        if req.marker is not None and not any(req.marker.evaluate({"extra": e}) for e in (active or {""})):
            continue
        name = _name(text)
        wanted = set(req.extras)
        if (name, frozenset(wanted)) in seen:
            continue
        seen.add((name, frozenset(wanted)))
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        todo += [(r, wanted) for r in dist.requires or []]
    return {name for name, _ in seen}


def _desktop_only_modules() -> set[str]:
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    base = _closure(project["dependencies"])
    desktop = _closure(["osworld-mcp-env[desktop]"]) - base - {"osworld-mcp-env"}
    owners = metadata.packages_distributions()
    return {
        module
        for module, dists in owners.items()
        if not module.startswith("_") and {re.sub(r"[-_.]+", "-", d).lower() for d in dists} <= desktop
    }


def test_the_base_install_is_gymnasium_and_numpy():
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    assert sorted(_name(r) for r in project["dependencies"]) == ["gymnasium", "numpy"]
    blocked = _desktop_only_modules()
    # The extra really is the heavy part: the office, evaluator and desktop libraries are in it.
    assert {"openpyxl", "docx", "pandas", "mcp", "mss", "Xlib", "jsonschema", "av"} <= blocked


def test_the_interface_imports_without_the_desktop_extra_and_the_env_names_it():
    blocked = sorted(_desktop_only_modules() - {"PIL"})  # pillow is the agent's own dependency too
    code = f"""
import importlib, importlib.abc, json, sys
BLOCKED = set({blocked!r})
class Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
sys.meta_path.insert(0, Blocker())
for module in {list(INTERFACE + AGENT)!r}:
    importlib.import_module(module)
from osworld_mcp_env.tasks import BUNDLED_TASK_IDS
from osworld_mcp_env.tasks.templates import TEMPLATES
from hybrid_agent.adapters import get_adapter
try:
    importlib.import_module("osworld_mcp_env.env")
    env_error = None
except ModuleNotFoundError as exc:
    env_error = str(exc)
json.dump({{"bundled": sorted(BUNDLED_TASK_IDS), "templates": len(TEMPLATES.names()), "env_error": env_error,
           "loaded": sorted(m for m in BLOCKED if m in sys.modules)}}, sys.stdout)
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    seen = json.loads(run.stdout)
    assert "calc-sum-column" in seen["bundled"] and seen["templates"] > 10
    assert seen["loaded"] == []
    assert seen["env_error"] is not None and "pip install 'osworld-mcp-env[desktop]'" in seen["env_error"]
