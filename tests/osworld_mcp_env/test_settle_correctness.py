"""A GUI step's observation shows the settled screen: it equals a frame taken 2 s later.

Runs ``tools/settle_check.py``'s check on a small sample: every input action kind
of the action table, once, in Writer and in the OS task's desktop. A caret that
blinked in between is allowed; any other changed pixel is a miss, listed.

Calc is measured by the tool, not asserted here: LibreOffice enables and
disables toolbar buttons (Clone Formatting after leaving a cell's edit mode)
from its own timers, seconds after the input, with nothing drawn or computed in
between, so no settle wait short of seconds sees them.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from osworld_mcp_env.actions import INPUT_ACTIONS

sys.path.insert(0, str(Path(__file__).parents[2] / "tools"))

import settle_check  # tools/ is not a package: found through sys.path above

pytestmark = pytest.mark.desktop

SAMPLE = ("writer-replace-word", "os-create-file")


def test_every_action_kind_returns_the_settled_screen(make_env):
    env = make_env(enable_mcp=False, max_steps=1_000)
    outcomes = [o for task in SAMPLE for o in settle_check.check_task(env, task, rounds=1, wait_s=2.0)]
    kinds = {o.action["action"] for o in outcomes}
    assert kinds == set(INPUT_ACTIONS)
    misses = [o for o in outcomes if not o.settled and not o.caret_blink]
    assert not misses, settle_check.report(outcomes)
