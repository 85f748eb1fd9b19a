"""The stale-frame guard's rule on hand-made layouts: which changed frames still admit a cited point.

The layouts are the ones measured on the embedded desktop: Calc maximised in its frame
(0, 0, 1920x1080), the File menu and its submenu as override-redirect windows at
(0, 44) 302x607 and (300, 44) 285x278 once alt+f is pressed.
"""

from __future__ import annotations

import pytest
from osworld_mcp_env.actions import cited_points
from osworld_mcp_env.guest.layout import (
    LayoutMemory,
    LayoutSample,
    TopWindow,
    check_cited_frame,
    stale_reasons,
    window_changes,
)

SCREEN = (1920, 1080)
CALC = TopWindow(0x200261, 0, 0, 1920, 1080, title="numbers.xlsx - LibreOffice Calc")
FILE_MENU = TopWindow(0xC00131, 0, 44, 302, 607, override_redirect=True)
SUBMENU = TopWindow(0xC00135, 300, 44, 285, 278, override_redirect=True)
TERMINAL = TopWindow(0x400010, 1200, 600, 400, 300, title="Terminal")
CALC_CLIENT = 0x4000007


def sample(*windows: TopWindow, active: int = CALC_CLIENT, screen: tuple[int, int] = SCREEN) -> LayoutSample:
    return LayoutSample(screen=screen, windows=windows, active=active)


def moved(window: TopWindow, x: int, y: int) -> TopWindow:
    return TopWindow(
        window.window_id, x, y, window.width, window.height, window.override_redirect, window.title
    )


def test_a_click_under_a_menu_opened_since_the_frame_is_refused_and_says_where():
    before, after = sample(CALC), sample(CALC, FILE_MENU, SUBMENU)
    reasons = stale_reasons(before, after, [(60, 200)])
    assert reasons == [
        "[60, 200] was on 'numbers.xlsx - LibreOffice Calc' 0x200261 at (0, 0) 1920x1080 and is now on "
        "popup (menu, tooltip or dropdown) 0xc00131 at (0, 44) 302x607"
    ]
    # The same menu leaves a point it does not cover alone: (1000, 500) is on Calc in both.
    assert stale_reasons(before, after, [(1000, 500)]) == []
    # A drag is checked at both ends.
    assert len(stale_reasons(before, after, [(1000, 500), (301, 50)])) == 1


def test_a_window_moved_elsewhere_is_admitted_and_one_moved_under_or_over_the_point_is_not():
    before = sample(CALC, TERMINAL)
    away = sample(CALC, moved(TERMINAL, 1300, 650))
    assert stale_reasons(before, away, [(300, 400)]) == []
    assert stale_reasons(before, away, [(1250, 650)])  # was the terminal, now Calc
    assert stale_reasons(before, away, [(1350, 700)])  # the terminal, at another place
    over = sample(CALC, moved(TERMINAL, 200, 300))
    assert stale_reasons(before, over, [(300, 400)])  # raised over the point


def test_restacking_under_the_point_and_new_bounds_are_refused():
    left = TopWindow(1, 0, 0, 800, 600, title="left")
    right = TopWindow(2, 400, 0, 800, 600, title="right")
    # Only the stacking order changed: (500, 10) lies in both; (10, 10) only in `left`.
    assert stale_reasons(sample(left, right), sample(right, left), [(500, 10)])
    assert stale_reasons(sample(left, right), sample(right, left), [(10, 10)]) == []
    assert stale_reasons(sample(CALC), sample(CALC, screen=(1280, 800)), [(10, 10)]) == [
        "the desktop bounds changed from 1920x1080 to 1280x800"
    ]


def test_an_action_that_cites_no_point_needs_the_same_focus_and_popups():
    assert stale_reasons(sample(CALC, TERMINAL), sample(CALC, moved(TERMINAL, 0, 0)), []) == []
    assert stale_reasons(sample(CALC), sample(CALC, FILE_MENU), []) == [
        "a popup (menu, tooltip or dropdown) opened or closed"
    ]
    assert stale_reasons(sample(CALC, TERMINAL), sample(CALC, TERMINAL, active=7), []) == [
        "the active window changed from 0x4000007 to 0x7"
    ]


def test_the_fingerprint_covers_placement_stacking_focus_and_bounds_not_titles():
    base = sample(CALC, TERMINAL)
    renamed = sample(CALC, TopWindow(**{**TERMINAL.__dict__, "title": "other"}))
    assert base.fingerprint == renamed.fingerprint
    for changed in (
        sample(TERMINAL, CALC),
        sample(CALC, moved(TERMINAL, 1201, 600)),
        sample(CALC, TERMINAL, active=0),
        sample(CALC, TERMINAL, screen=(1920, 1081)),
        sample(CALC),
    ):
        assert changed.fingerprint != base.fingerprint
    assert LayoutSample.from_dict(base.to_dict()) == base


def test_memory_is_bounded_and_a_forgotten_frame_fails_closed():
    memory = LayoutMemory(size=2)
    first = memory.remember(sample(CALC))
    memory.remember(sample(CALC, TERMINAL))
    assert check_cited_frame(memory, first, sample(CALC, TERMINAL), [(10, 10)]) is None  # admitted
    memory.remember(sample(CALC, FILE_MENU))  # the third sample pushes the first out
    memory.remember(sample(CALC, SUBMENU))
    refusal = check_cited_frame(memory, first, sample(CALC, TERMINAL), [(10, 10)])
    assert refusal is not None and refusal["reasons"] == ["the cited frame's layout is no longer known"]
    assert refusal["input_events_emitted"] is False
    assert LayoutSample.from_dict(refusal["layout"]) == sample(CALC, TERMINAL)
    # The unchanged layout needs no memory at all.
    current = sample(CALC, FILE_MENU)
    assert check_cited_frame(LayoutMemory(), current.fingerprint, current, []) is None


@pytest.mark.parametrize(
    ("action", "arguments", "points"),
    [
        ("left_click", {"coordinate": [60, 200]}, [(60, 200)]),
        ("left_click_drag", {"coordinate": [5, 6], "start_coordinate": [1.4, 2.6]}, [(5, 6), (1, 3)]),
        ("scroll", {"pixels": 3}, []),  # at the pointer: no cited point
        ("key", {"keys": ["alt", "f"]}, []),
        ("left_click", {"coordinate": "here"}, []),  # refused by the validator before any guard
        ("no_such_action", {"coordinate": [1, 2]}, []),
    ],
)
def test_cited_points_are_the_coordinate_arguments_of_the_action_table(action, arguments, points):
    assert cited_points(action, arguments) == points


def test_window_changes_name_what_opened_closed_moved_and_took_the_focus():
    assert window_changes(sample(CALC), sample(CALC)) == []
    assert window_changes(sample(CALC), sample(CALC, FILE_MENU)) == [
        {"change": "opened", "window": "popup (menu, tooltip or dropdown) 0xc00131 at (0, 44) 302x607"}
    ]
    after = sample(CALC, moved(TERMINAL, 0, 0), active=0x400011)
    assert window_changes(sample(CALC, TERMINAL, FILE_MENU), after) == [
        {"change": "closed", "window": "popup (menu, tooltip or dropdown) 0xc00131 at (0, 44) 302x607"},
        {"change": "moved", "window": "'Terminal' 0x400010 at (0, 0) 400x300"},
        {"change": "activated", "window": "0x400011"},
    ]
