"""The episode-start home as on OSWorld's VM: Chromium searches with Google, VS Code's user paths exist."""

from __future__ import annotations

import json
from pathlib import Path

from osworld_mcp_env.backends.local.home import (
    CHROMIUM_PREFERENCES,
    HOME_DIRECTORIES,
    ensure_home_template,
    write_home,
)
from osworld_mcp_env.evaluators.getters.chrome import from_preferences
from osworld_mcp_env.evaluators.metrics.records import is_expected_search_query
from osworld_mcp_env.tasks import read_task_file
from task_data import OSWORLD_EXAMPLES


def _search_url(home: Path, query: str) -> str:
    prefs = json.loads((home / ".config/chromium/Default/Preferences").read_text())
    return prefs["default_search_provider_data"]["template_url_data"]["url"].replace("{searchTerms}", query)


def test_a_query_typed_in_the_address_bar_is_the_google_search_task_f8cfa149_expects(tmp_path: Path):
    write_home(tmp_path)
    task = read_task_file(next(OSWORLD_EXAMPLES.glob("multi_apps/f8cfa149-*.json")))
    rule = task.evaluator.checks[0].expected.config["rules"]
    assert _search_url(tmp_path, "nereida") == "https://www.google.com/search?q=nereida"
    assert is_expected_search_query({"url": _search_url(tmp_path, "nereida")}, rule) == 1.0
    # Debian's Chromium default (DuckDuckGo), which the home used to leave in place, scores 0.
    assert is_expected_search_query({"url": "https://duckduckgo.com/?q=nereida"}, rule) == 0.0


def test_the_default_search_engine_getter_reads_google_from_the_untouched_home(tmp_path: Path):
    write_home(tmp_path)
    data = (tmp_path / ".config/chromium/Default/Preferences").read_bytes()
    assert from_preferences("default_search_engine", data) == "Google"  # a no-op of "switch to Bing" scores 0


def test_the_home_template_is_rebuilt_when_chromium_preferences_change(tmp_path: Path, monkeypatch):
    first = ensure_home_template(tmp_path, None)
    changed = json.loads(json.dumps(CHROMIUM_PREFERENCES))
    changed["default_search_provider_data"]["template_url_data"]["short_name"] = "Bing"
    monkeypatch.setattr("osworld_mcp_env.backends.local.home.CHROMIUM_PREFERENCES", changed)
    second = ensure_home_template(tmp_path, None)
    assert first != second
    assert json.loads((second / ".config/chromium/Default/Preferences").read_text()) == changed


def test_vs_code_user_paths_are_in_the_home_and_the_template_follows_them(tmp_path: Path, monkeypatch):
    # Task 982d12a5's setup writes ~/.config/Code/User/settings.json before VS Code ever ran.
    write_home(tmp_path / "home")
    assert (tmp_path / "home/.config/Code/User").is_dir()
    assert (tmp_path / "home/.vscode/extensions").is_dir()
    first = ensure_home_template(tmp_path, None)
    more = (*HOME_DIRECTORIES, "Templates")
    monkeypatch.setattr("osworld_mcp_env.backends.local.home.HOME_DIRECTORIES", more)
    second = ensure_home_template(tmp_path, None)
    assert first != second
    assert (second / "Templates").is_dir()
