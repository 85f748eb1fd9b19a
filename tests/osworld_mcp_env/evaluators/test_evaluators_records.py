"""Text, JSON, list and url metrics on hand-made inputs, with the score OSWorld's function gives and why."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from osworld_mcp_env.evaluators import METRICS, ZeroScore


def metric(name: str):
    return METRICS.get(name).fn


def test_check_list_regexes_per_line(tmp_path: Path):
    f = tmp_path / "l.txt"
    f.write_text("alpha 1\nbeta 2\n")
    # Every expect regex must hit some line, and no unexpect regex any line.
    assert metric("check_list")(str(f), {"expect": [r"^alpha", r"beta \d"], "unexpect": ["gamma"]}) == 1.0
    assert metric("check_list")(str(f), {"expect": [r"^beta 1"]}) == 0.0
    assert metric("check_list")(str(f), {"expect": [], "unexpect": ["a 1"]}) == 0.0
    # OSWorld open()s the path and raises on a missing file: 0 with a reason here.
    with pytest.raises(ZeroScore):
        metric("check_list")(str(tmp_path / "none"), {"expect": []})


def test_check_list_and_check_line_number_split_lines_as_a_file_iterates(tmp_path: Path):
    # OSWorld iterates the open file: a form feed or U+2028 does not end a line, \r\n and \r do.
    f = tmp_path / "l.txt"
    f.write_bytes("alpha\x0cbeta\u2028gamma\r\ndelta\r10:00:01 x\x1c10:00:02 y\n".encode())
    assert metric("check_list")(str(f), {"expect": [r"^beta"]}) == 0.0  # "beta" is mid-line for OSWorld
    assert metric("check_list")(str(f), {"expect": [r"^alpha.*gamma$", r"^delta$"]}) == 1.0
    assert metric("check_line_number")(str(f), {"expected": "1"}) == 1.0  # both times share one line


def test_check_json_key_paths_and_value_rules(tmp_path: Path):
    f = tmp_path / "p.json"
    f.write_text(json.dumps({"a": {"b": [5, "x"]}, "name": "Bob"}))
    rules = {
        "expect": [{"key": ["a", "b", 0], "method": "gt", "ref": 3}],
        "unexpect": [{"key": ["zz"], "method": "eq", "ref": 1}],
    }
    assert metric("check_json")(str(f), rules) == 1.0
    # A key path that does not exist in an expect rule -> 0.
    assert metric("check_json")(str(f), {"expect": [{"key": ["a", "c"], "method": "eq", "ref": 1}]}) == 0.0
    # A regex against an int raises inside OSWorld's per-rule try -> 0.
    assert (
        metric("check_json")(str(f), {"expect": [{"key": ["a", "b", 0], "method": "re", "ref": "5"}]}) == 0.0
    )
    y = tmp_path / "p.yaml"
    y.write_text("name: Bob\n")
    assert (
        metric("check_json")(
            str(y), {"expect": [{"key": ["name"], "method": "eq", "ref": "Bob"}]}, is_yaml=True
        )
        == 1.0
    )


def test_check_direct_json_object_modes():
    rules = {"expected": {"lang": "en", "tabs": 3}}
    # A string result has its single quotes turned into double quotes, then is parsed as JSON.
    assert metric("check_direct_json_object")("{'lang': 'en', 'tabs': 3}", rules) == 1.0
    assert metric("check_direct_json_object")({"lang": "fr", "tabs": 3}, rules) == 0.0
    # expect_in_result: a str expected must be a substring; a list expected needs one member matching.
    loose = {"expect_in_result": True, "expected": {"title": "Weather", "city": ["Paris", "Lyon"]}}
    assert metric("check_direct_json_object")({"title": "Weather today", "city": "Lyon"}, loose) == 1.0
    assert metric("check_direct_json_object")({"title": "News", "city": "Lyon"}, loose) == 0.0
    with pytest.raises(ZeroScore, match="not JSON"):
        metric("check_direct_json_object")("not json", rules)


def test_url_metrics():
    rules = {"expected": [r"google\.com/search", r"q=cats"]}
    assert metric("is_expected_url_pattern_match")("https://www.google.com/search?q=cats", rules) == 1.0
    assert (
        metric("is_expected_url_pattern_match")({"url": "https://www.google.com/search?q=dogs"}, rules) == 0.0
    )
    # A dict without 'url' is an invalid result for OSWorld -> 0.
    assert metric("is_expected_url_pattern_match")({"title": "x"}, rules) == 0.0
    assert (
        metric("is_expected_search_query")({"url": "https://x/?q=cats"}, {"expect": {"pattern": "q=cats"}})
        == 1.0
    )


def test_list_and_literal_metrics(tmp_path: Path):
    assert metric("is_in_list")(["a", "b"], {"expected": "b"}) == 1.0
    assert metric("is_in_list")("abc", {"expected": "d"}) == 0.0
    assert metric("match_in_list")("b", {"expected": ["a", "b"]}) == 1.0
    # literal_match compares str() forms: 3 and "3" are equal; list type compares element-wise.
    assert metric("literal_match")(3, "3") == 1.0
    assert metric("literal_match")(["A", 1], ["a", "1"], type="list", ignore_case=True) == 1.0
    assert metric("literal_match")(["A"], "A", type="list") == 0.0
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("1\n2\n3\n")
    b.write_text("1\n2\n4\n")
    # difflib on lines: 2 matching lines of 3+3 -> 2*2/6.
    assert metric("diff_text_file")(str(a), str(b)) == pytest.approx(2 / 3)


def test_settings_and_config_metrics(tmp_path: Path):
    f = tmp_path / "settings.json"
    f.write_text(json.dumps({"editor.fontSize": 14, "files.autoSave": "afterDelay", "x": {"y": 1, "z": 2}}))
    assert metric("check_json_settings")(str(f), {"expected": {"editor.fontSize": 14}}) == 1.0
    assert metric("check_json_settings")(str(f), {"expected": {"editor.fontSize": 12}}) == 0.0
    # compare_config: the expected JSON must be a nested subset of the file's JSON.
    assert metric("compare_config")(str(f), {"expected": '{"x": {"y": 1}}'}) == 1.0
    assert metric("compare_config")(str(f), {"expected": '{"x": {"y": 2}}'}) == 0.0
    assert metric("compare_config")(str(f), {"expected": '{"x": {"y": 1}}'}, containment_ok=False) == 0.0
    assert (
        metric("is_extension_installed")("ms-python.python\n", {"type": "contain", "expected": "ms-python"})
        == 1.0
    )
    assert (
        metric("is_extension_installed")(
            "ms-python.python\n", {"type": "not_contain", "expected": "ms-python"}
        )
        == 0.0
    )


def test_os_metrics():
    out = "Local time: x\nUniversal time: y\nRTC time: z\nTime zone: Etc/UTC (UTC, +0000)\n"
    assert metric("is_utc_0")(out, None) == 1.0
    assert metric("is_utc_0")(out.replace("+0000", "+0100"), None) == 0.0
    fav = "['thunderbird.desktop', 'vim.desktop']\n"
    assert (
        metric("check_gnome_favorite_apps")(fav, {"expected": ["vim.desktop", "thunderbird.desktop"]}) == 1.0
    )
    assert metric("check_gnome_favorite_apps")(fav, {"expected": ["vim.desktop"]}) == 0.0
    listing = {"children": [{"name": "a.jpg"}, {"name": "b.jpg"}]}
    assert metric("check_moved_jpgs")(listing, {"expected": ["b.jpg", "a.jpg"]}) == 1.0
    # No such folder (list_directory gives None): OSWorld raises on None["children"]; 0 here.
    assert metric("check_moved_jpgs")(None, {"expected": ["a.jpg"]}) == 0.0
