"""Prepared resets are on by default where the host has memory for one more desktop per env."""

from __future__ import annotations

from pathlib import Path

from osworld_mcp_env.env.prepared_reset import PREPARED_DESKTOP_MB, prepared_resets_fit, with_prepared_resets


def meminfo(tmp_path: Path, available_mb: int) -> Path:
    path = tmp_path / "meminfo"
    path.write_text(f"MemTotal:       99999999 kB\nMemAvailable:   {available_mb * 1024} kB\n")
    return path


def test_prepared_resets_fit_counts_one_desktop_per_env(tmp_path: Path) -> None:
    four = meminfo(tmp_path, 4 * PREPARED_DESKTOP_MB)
    assert prepared_resets_fit(4, meminfo=four)
    assert not prepared_resets_fit(5, meminfo=four)


def test_without_a_readable_meminfo_resets_stay_cold(tmp_path: Path) -> None:
    assert not prepared_resets_fit(1, meminfo=tmp_path / "missing")
    (tmp_path / "odd").write_text("MemTotal: 1 kB\n")
    assert not prepared_resets_fit(1, meminfo=tmp_path / "odd")


def test_an_explicit_choice_is_kept(monkeypatch) -> None:
    assert with_prepared_resets({"prepare_resets": False, "a": 1}, 1) == {"prepare_resets": False, "a": 1}
    monkeypatch.setattr("osworld_mcp_env.env.prepared_reset.prepared_resets_fit", lambda envs: envs < 3)
    assert with_prepared_resets({"a": 1}, 2) == {"a": 1, "prepare_resets": True}
    assert with_prepared_resets({}, 3) == {"prepare_resets": False}
