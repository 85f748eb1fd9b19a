"""A GUI step's observation shows the settled screen: it equals a frame taken 2 s later.

Runs ``tools/settle_check.py``'s check on a small sample: every input action kind
of the action table, once, in Writer and in the OS task's desktop. A caret that
blinked in between is allowed; any other changed pixel is a miss, listed.

Calc redraws its formula bar, toolbar buttons and status bar from its own timers
0.5-0.8 s after a click or typing, with nothing drawn or computed in between
(6 of 48 steps of ``settle_check.py --tasks calc-sum-column`` missed at a 400 ms
horizon): the default horizon is 800 ms while LibreOffice has the focus
(``guest.settle.APP_TIMER_HORIZON_MS``), asserted on Calc with no option set.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import cast

import pytest
from osworld_mcp_env.actions import INPUT_ACTIONS
from osworld_mcp_env.env.core import OSWorldMCPEnv

sys.path.insert(0, str(Path(__file__).parents[3] / "tools"))

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


def test_libreoffices_horizon_settles_calc_by_default(make_env):
    """LibreOffice's 800 ms horizon waits for Calc's late timers: every step's screen is settled."""
    env = make_env(enable_mcp=False, max_steps=1_000)
    outcomes = list(settle_check.check_task(env, "calc-sum-column", rounds=1, wait_s=2.0))
    misses = [o for o in outcomes if not o.settled and not o.caret_blink]
    assert not misses, settle_check.report(outcomes)


def test_the_reset_observation_shows_the_loaded_task(make_env):
    """LibreOffice refreshes its toolbars from a timer after a document is drawn: reset waits for it.

    Without the wait, 4 of 6 Writer resets returned a frame whose whole toolbar
    row was repainted some 70 ms later.
    """
    env = make_env(enable_mcp=False)
    outcomes = []
    for task in ("writer-replace-word", "calc-sum-column") * 2:
        obs, _info = env.reset(options={"task": task})
        desktop = cast(OSWorldMCPEnv, env.unwrapped).desktop
        time.sleep(1.0)  # a later frame: what the task's screen settles to
        later = desktop.screenshot().pixels
        outcomes.append(settle_check.compare(task, 0, {"action": "reset"}, 0.0, obs["screenshot"], later))
    misses = [o for o in outcomes if not o.settled and not o.caret_blink]
    assert not misses, settle_check.report(outcomes)
