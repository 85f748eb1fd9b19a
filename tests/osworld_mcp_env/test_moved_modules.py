"""The layout by role keeps every old import path working, as an alias that warns."""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
from pathlib import Path

from osworld_mcp_env._moved import MOVED_MODULES

ROOT = Path(__file__).resolve().parents[2]


def test_an_old_path_is_the_new_module_and_warns_with_the_new_path():
    # A fresh interpreter: this one may have imported an old name already (each warns once).
    code = (
        "import importlib, json, sys, warnings\n"
        "from osworld_mcp_env._moved import MOVED_MODULES\n"
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
    assert set(seen) == set(MOVED_MODULES)
    for old, (same, warned) in seen.items():
        assert same, old
        assert f"{old} moved to {MOVED_MODULES[old]}; the old path is an alias and will be removed." in warned


def test_every_new_path_exists():
    for new in MOVED_MODULES.values():
        assert importlib.util.find_spec(new) is not None, new


def test_nothing_in_the_repository_imports_an_old_path():
    sources = [
        *ROOT.glob("packages/*/src/**/*.py"),
        *ROOT.glob("tests/**/*.py"),
        *ROOT.glob("tools/**/*.py"),
        *ROOT.glob("examples/**/*.py"),
    ]
    old_names = "|".join(re.escape(name) for name in MOVED_MODULES)
    pattern = re.compile(rf"(?:^|[\s\"'`(])({old_names})\b(?!\.)", re.MULTILINE)
    parent_child = {name.rpartition(".") for name in MOVED_MODULES}
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
