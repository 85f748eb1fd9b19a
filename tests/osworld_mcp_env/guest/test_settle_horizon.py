"""The settle wait's timer horizon per app: the guest's table, the request's overrides, bad values refused."""

from __future__ import annotations

import pytest
from osworld_mcp_env.guest.routes_hybrid import _gui_settle, _wait_settle
from osworld_mcp_env.guest.settle import APP_TIMER_HORIZON_MS, SettleConfig
from osworld_mcp_env.guest.transport import RequestError


def test_libreoffice_waits_800_ms_for_its_timers_and_the_rest_400():
    config = SettleConfig()
    for app in ("libreoffice_calc", "libreoffice_writer", "libreoffice_impress", "libreoffice"):
        assert config.for_app(app).timer_horizon_ms == 800.0
    for app in ("os", "code", "google_chrome", "vlc", "", "someunknownapp"):
        assert config.for_app(app) is config and config.timer_horizon_ms == 400.0


def test_a_request_without_horizons_keeps_the_guests_table():
    assert _gui_settle(SettleConfig(), {}).for_app("libreoffice_calc").timer_horizon_ms == 800.0
    assert _gui_settle(SettleConfig(), {}).for_app("os").timer_horizon_ms == 400.0


def test_timer_horizon_ms_is_one_horizon_for_every_app():
    # The old wire field keeps its meaning: 0 turns timers off in LibreOffice too.
    config = _gui_settle(SettleConfig(), {"timer_horizon_ms": 0})
    assert [config.for_app(app).timer_horizon_ms for app in ("libreoffice_calc", "os", "")] == [0.0] * 3


def test_app_entries_override_the_table_and_the_every_app_horizon():
    config = _gui_settle(SettleConfig(), {"app_timer_horizon_ms": {"os": 600, "libreoffice_calc": 1000}})
    assert config.for_app("os").timer_horizon_ms == 600.0
    assert config.for_app("libreoffice_calc").timer_horizon_ms == 1000.0
    assert config.for_app("libreoffice_writer").timer_horizon_ms == 800.0  # the table's, kept
    assert config.for_app("code").timer_horizon_ms == 400.0
    both = _gui_settle(SettleConfig(), {"timer_horizon_ms": 100, "app_timer_horizon_ms": {"os": 600}})
    assert both.for_app("os").timer_horizon_ms == 600.0
    assert both.for_app("libreoffice_calc").timer_horizon_ms == 100.0
    assert APP_TIMER_HORIZON_MS["libreoffice_calc"] == 800.0  # the shared table is never changed


@pytest.mark.parametrize(
    "payload",
    [
        {"timer_horizon_ms": -1},
        {"timer_horizon_ms": 5001},
        {"timer_horizon_ms": "800"},
        {"timer_horizon_ms": True},
        {"timer_horizon_ms": float("nan")},
        {"app_timer_horizon_ms": ["os", 800]},
        {"app_timer_horizon_ms": {"os": "800"}},
        {"app_timer_horizon_ms": {"os": 9000}},
        {"app_timer_horizon_ms": {"os": float("nan")}},
    ],
)
def test_a_bad_horizon_is_refused_before_any_input(payload):
    with pytest.raises(RequestError) as info:
        _gui_settle(SettleConfig(), payload)
    assert info.value.status == 400
    assert info.value.extra == {"code": "invalid_arguments", "input_events_emitted": False}


def test_a_plain_wait_continues_no_setup_unless_asked():
    # A tool call's wait (no thresholds given) keeps the rules that count every busy moment.
    config = _wait_settle(SettleConfig(quiet_ms=20.0), {})
    assert (config.quiet_ms, config.prior_change_ms, config.work_ms) == (20.0, 0.0, 0.0)
    reset = _wait_settle(SettleConfig(), {"quiet_ms": 150, "prior_change_ms": 400, "work_ms": 2})
    assert (reset.quiet_ms, reset.prior_change_ms, reset.work_ms) == (150.0, 400.0, 2.0)


@pytest.mark.parametrize(
    "payload",
    [{"prior_change_ms": -1}, {"prior_change_ms": float("nan")}, {"work_ms": 1e9}, {"work_ms": "two"}],
)
def test_a_bad_setup_threshold_is_refused(payload):
    with pytest.raises(RequestError) as caught:
        _wait_settle(SettleConfig(), payload)
    assert caught.value.status == 400
