"""Packages laid out by role keep every old import path working, as an alias that warns.

Both the env's and the trainer's tables go through one finder
(``osworld_mcp_env.module_aliases``); each old path must import, warn with its new path and be
the very module at the new path, and nothing in the repository may still import an old path.
"""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from grpo_trainer._moved import MOVED_MODULES as TRAINER_MOVED
from osworld_mcp_env._moved import MOVED_MODULES as ENV_MOVED

ROOT = Path(__file__).resolve().parents[1]
TABLES = {"osworld_mcp_env": ENV_MOVED, "grpo_trainer": TRAINER_MOVED}


@pytest.mark.parametrize("package", TABLES)
def test_an_old_path_is_the_new_module_and_warns_with_the_new_path(package):
    # A fresh interpreter: this one may have imported an old name already (each warns once).
    code = (
        "import importlib, json, sys, warnings\n"
        f"from {package}._moved import MOVED_MODULES\n"
        "seen = {}\n"
        "for old, new in MOVED_MODULES.items():\n"
        "    with warnings.catch_warnings(record=True) as caught:\n"
        "        warnings.simplefilter('always')\n"
        "        module = importlib.import_module(old)\n"
        "    same = module is importlib.import_module(new) and module.__name__ == new\n"
        "    seen[old] = [same, [str(w.message) for w in caught if w.category is DeprecationWarning]]\n"
        "json.dump(seen, sys.stdout)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    seen = json.loads(out)
    table = TABLES[package]
    assert set(seen) == set(table)
    for old, (same, warned) in seen.items():
        assert same, old
        assert f"{old} moved to {table[old]}; the old path is an alias and will be removed." in warned


def test_the_objects_of_an_old_path_are_those_of_the_new_one():
    # ``from old import Name`` hands out the new module's objects (one class, one registry), and
    # ``from package import old_module`` binds that module too; for every old module of the trainer.
    code = (
        "import importlib, json, sys, warnings\n"
        "from grpo_trainer._moved import MOVED_MODULES\n"
        "warnings.simplefilter('ignore', DeprecationWarning)\n"
        "bad = []\n"
        "for old, new in MOVED_MODULES.items():\n"
        "    parent, _, child = old.rpartition('.')\n"
        "    alias = getattr(__import__(old, fromlist=['_']), '__dict__')\n"
        "    target = importlib.import_module(new).__dict__\n"
        "    bad += [f'{old}.{n}' for n, v in alias.items() if target.get(n) is not v]\n"
        "    exec(f'from {parent} import {child} as _bound')\n"
        "    if _bound is not importlib.import_module(new):\n"
        "        bad.append(f'from {parent} import {child}')\n"
        "json.dump(bad, sys.stdout)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == []


@pytest.mark.parametrize("package", TABLES)
def test_every_new_path_exists(package):
    for new in TABLES[package].values():
        assert importlib.util.find_spec(new) is not None, new


@pytest.mark.parametrize("package", TABLES)
def test_nothing_in_the_repository_imports_an_old_path(package):
    table = TABLES[package]
    sources = [
        *ROOT.glob("packages/*/src/**/*.py"),
        *ROOT.glob("tests/**/*.py"),
        *ROOT.glob("tools/**/*.py"),
        *ROOT.glob("examples/**/*.py"),
        *ROOT.glob("examples/**/*.toml"),
        *ROOT.glob("packages/*/pyproject.toml"),
    ]
    old_names = "|".join(re.escape(name) for name in table)
    pattern = re.compile(rf"(?:^|[\s\"'`(~])({old_names})\b(?!\.)", re.MULTILINE)
    parent_child = {name.rpartition(".") for name in table}
    offenders = []
    for path in sources:
        if path.name in {"_moved.py", "test_moved_modules.py"}:
            continue
        text = path.read_text()
        offenders += [f"{path.relative_to(ROOT)}: {m.group(1)}" for m in pattern.finditer(text)]
        for parent, _, child in parent_child:
            if re.search(rf"^\s*from {re.escape(parent)} import (?:.*, )?{child}\b", text, re.MULTILINE):
                offenders.append(f"{path.relative_to(ROOT)}: from {parent} import {child}")
    assert offenders == []
