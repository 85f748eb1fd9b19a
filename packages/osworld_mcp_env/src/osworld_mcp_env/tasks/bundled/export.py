"""The seeded suite in OSWorld's on-disk layout: seed-0 task JSONs and ``train``/``test`` splits.

``seeded/examples/<domain>/<id>.json`` holds each template's seed-0 instance and
``seeded/train.json`` / ``seeded/test.json`` map OSWorld domain names to ids, as
OSWorld's ``evaluation_examples`` do, so a split file runs anywhere a split is taken
(``hybrid-agent eval --suite .../seeded/test.json``). The files are generated from
the templates; ``python -m osworld_mcp_env.tasks.bundled.export`` rewrites them and
a test keeps them equal to the code.

The split holds templates out: per domain, every :data:`TEST_EVERY`-th template (in
id order) is a test template, the rest train. Train ids are template ids; RL draws
their other seeds (``<id>@<seed>``), evaluation runs seed 0.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from osworld_mcp_env.tasks.templates import TEMPLATES, instantiate

TEST_EVERY = 4
OSWORLD_DOMAINS = {
    "calc": "libreoffice_calc",
    "writer": "libreoffice_writer",
    "impress": "libreoffice_impress",
    "os": "os",
    "vlc": "vlc",
    "chrome": "chrome",
    "multi_apps": "multi_apps",
}
"""Template domain -> OSWorld's domain name (its folder and split key)."""

SEEDED_DIR = "seeded"


def seeded_root() -> Path:
    """Where the seeded suite's files lie in the installed package."""
    return Path(str(resources.files("osworld_mcp_env.tasks.bundled"))) / SEEDED_DIR


def seeded_splits() -> dict[str, dict[str, list[str]]]:
    """``{"train": {domain: ids}, "test": {domain: ids}}`` over every registered template."""
    by_domain: dict[str, list[str]] = {}
    for template_id in TEMPLATES.names():
        by_domain.setdefault(OSWORLD_DOMAINS[TEMPLATES.get(template_id).domain], []).append(template_id)
    splits: dict[str, dict[str, list[str]]] = {"train": {}, "test": {}}
    for domain, ids in sorted(by_domain.items()):
        ids = sorted(ids)
        splits["test"][domain] = ids[TEST_EVERY - 1 :: TEST_EVERY]
        splits["train"][domain] = [t for t in ids if t not in splits["test"][domain]]
    return splits


def seeded_files() -> dict[str, str]:
    """Relative path -> JSON text of every file of the seeded suite's layout."""
    files = {}
    for template_id in TEMPLATES.names():
        domain = OSWORLD_DOMAINS[TEMPLATES.get(template_id).domain]
        files[f"examples/{domain}/{template_id}.json"] = _dump(instantiate(template_id, 0).task)
    for name, split in seeded_splits().items():
        files[f"{name}.json"] = _dump(split)
    return files


def write_seeded_files(root: Path) -> list[Path]:
    """Writes :func:`seeded_files` under ``root`` (stale task JSONs removed); returns the paths written."""
    files = seeded_files()
    for old in root.glob("examples/*/*.json"):
        if str(old.relative_to(root)) not in files:
            old.unlink()
    written = []
    for rel, body in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body, encoding="utf-8")
        written.append(path)
    return written


def _dump(value: Mapping[str, Any]) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    print(f"wrote {len(write_seeded_files(seeded_root()))} files under {seeded_root()}")
