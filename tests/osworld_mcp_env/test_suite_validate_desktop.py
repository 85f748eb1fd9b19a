"""``osworld-mcp validate`` on one template per domain, on the real desktop (``-m desktop``).

Both oracles score 1, the no-op 0, the near miss < 1, and two GUI oracle runs agree.
Two repeats, not three, keep the CI time to a few minutes; the CLI defaults to three.
"""

from __future__ import annotations

import gymnasium as gym
import pytest
from osworld_mcp_env.validate import suite_entries, validate

pytestmark = pytest.mark.desktop

SUBSET = [
    "calc-column-sum",
    "writer-replace-name",
    "impress-set-title",
    "os-rename-folder",
    "vlc-play-named",
    "multi-textfile-to-writer",
]


def test_one_template_per_domain_validates():
    entries = suite_entries("seeded", seeds=1, task_ids=SUBSET)
    reports = validate(entries, lambda: gym.make("osworld_mcp_env:OSWorldMCP-v0", record_timings=False), 2)
    assert {r.domain for r in reports} == {"calc", "writer", "impress", "os", "vlc", "multi_apps"}
    for r in reports:
        assert r.gui == 1.0 and r.tools == 1.0, (r.task_id, r.problems)
        assert r.noop == 0.0 and r.near_miss is not None and r.near_miss < 1.0, (r.task_id, r.problems)
        assert len(r.repeats) == 2 and len(set(r.repeats)) == 1, (r.task_id, r.repeats)
        assert r.ok, (r.task_id, r.problems)
