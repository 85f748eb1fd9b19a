"""Metrics over text, lists, JSON records and urls, scored as OSWorld's general/chrome/vscode/basic_os ones.

Each takes ``(result, expected, **options)`` where ``expected`` is the task's rules
(a ``rule`` getter) or a file path. Where OSWorld's function raises (a missing file,
``json.loads`` of a non-JSON string), the check scores 0 with a reason (:class:`ZeroScore`).
"""

from __future__ import annotations

import ast
import difflib
import io
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from osworld_mcp_env.evaluators.metrics.cells import match_rule
from osworld_mcp_env.evaluators.registry import ZeroScore, register_metric


def _read(path: Any, what: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, TypeError, UnicodeDecodeError) as exc:
        raise ZeroScore(f"{what}: cannot read {path!r} (OSWorld raises): {exc}") from exc


@register_metric("check_list")
def check_list(result: Any, expected: Any, **options: Any) -> float:
    """1 when every ``expect`` regex matches some line and no ``unexpect`` regex matches any line."""
    if result is None:
        return 0.0
    expect = [re.compile(p) for p in expected.get("expect", [])]
    unexpect = [re.compile(p) for p in expected.get("unexpect", [])]
    # OSWorld iterates the file: lines end at "\n" only (str.splitlines also breaks at \f, \x1c, \u2028...).
    lines = io.StringIO(_read(result, "check_list")).readlines()
    found = all(any(r.search(line) for line in lines) for r in expect)
    return float(found and not any(r.search(line) for line in lines for r in unexpect))


def _walk(data: Any, keys: list[Any]) -> tuple[bool, Any]:
    for key in keys:
        try:
            data = data[key]
        except (KeyError, TypeError, IndexError):
            return False, None
    return True, data


@register_metric("check_json", options=("is_yaml",))
def check_json(result: Any, expected: Any, **options: Any) -> float:
    """1 when each ``expect`` rule (``key`` path, ``method``, ``ref``) holds and no ``unexpect`` rule does."""
    if result is None or not Path(result).exists():
        return 0.0
    text = _read(result, "check_json")
    try:
        if options.get("is_yaml", False):
            import yaml

            data = yaml.safe_load(text)
            if data is None:
                return 0.0
        else:
            data = json.loads(text)
    except ValueError:
        return 0.0
    try:
        for rule in expected.get("expect", []):
            found, value = _walk(data, rule["key"])
            if not found or not match_rule(value, rule):
                return 0.0
        for rule in expected.get("unexpect", []):
            found, value = _walk(data, rule["key"])
            if match_rule(value if found else None, rule):
                return 0.0
    except (TypeError, AttributeError, ValueError):
        return 0.0  # OSWorld's try/except around each rule
    return 1.0


def _json_object(result: Any) -> Any:
    if isinstance(result, str):
        try:
            return json.loads(result.strip().replace("'", '"'))
        except ValueError as exc:
            raise ZeroScore(f"check_direct_json_object: result is not JSON (OSWorld raises): {exc}") from exc
    return result


@register_metric("check_direct_json_object")
def check_direct_json_object(result: Any, expected: Any, **options: Any) -> float:
    """1 when the result object has the expected values (or, with ``expect_in_result``, contains them)."""
    result = _json_object(result)
    if result is None:
        return 0.0
    want = expected.get("expected", {})
    if any(v == "__EVALUATION_FAILED__" for v in (want or {}).values()):
        return 0.0
    try:
        if not expected.get("expect_in_result", False):
            for key, value in want.items():
                if want.get("ignore_list_order", False):
                    if sorted(value) != sorted(result.get(key)):
                        return 0.0
                elif value != result.get(key):
                    return 0.0
            return 1.0
        for key, value in want.items():
            got = result.get(key)
            if isinstance(value, list):
                hit = any(
                    (isinstance(got, list) and v in got) or (isinstance(got, str) and v == got) for v in value
                )
                if not hit:
                    return 0.0
            elif isinstance(value, str):
                if value not in got:
                    return 0.0
            else:
                return 0.0
    except (TypeError, AttributeError):
        return 0.0  # OSWorld's outer try/except
    return 1.0


@register_metric("is_in_list")
def is_in_list(result: Any, expected: Any, **options: Any) -> float:
    """1 when ``rules["expected"]`` is in the result (a substring of a text, a member of a list)."""
    try:
        return float(expected["expected"] in result)
    except TypeError as exc:
        raise ZeroScore(f"is_in_list: cannot look into {type(result).__name__} (OSWorld raises)") from exc


@register_metric("match_in_list")
def match_in_list(result: Any, expected: Any, **options: Any) -> float:
    """1 when the result is one of ``rules["expected"]``."""
    return float(result in expected["expected"])


@register_metric("literal_match", options=("type", "ignore_case"))
def literal_match(result: Any, expected: Any, **options: Any) -> float:
    """1 when ``str(result) == str(expected)`` (``type: list`` compares element-wise as strings)."""
    fold = (lambda s: str(s).lower()) if options.get("ignore_case", False) else str
    if options.get("type", "str") == "list":
        if not isinstance(result, list | tuple) or not isinstance(expected, list | tuple):
            return 0.0
        return float(
            len(result) == len(expected) and [fold(s) for s in result] == [fold(s) for s in expected]
        )
    return float(fold(result) == fold(expected))


@register_metric("diff_text_file")
def diff_text_file(result: Any, expected: Any, **options: Any) -> float:
    """Difflib's line ratio between the two text files (a similarity in [0, 1])."""
    if result is None:
        return 0.0
    a, b = _read(result, "diff_text_file").splitlines(), _read(expected, "diff_text_file").splitlines()
    return difflib.SequenceMatcher(a=a, b=b).ratio()


@register_metric("check_json_settings")
def check_json_settings(result: Any, expected: Any, **options: Any) -> float:
    """1 when the JSON file has every key/value of ``rules["expected"]``."""
    if not result:
        return 0.0
    try:
        data = json.loads(Path(result).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return 0.0
    return float(all(k in data and data[k] == v for k, v in expected["expected"].items()))


def _is_subset(want: Any, got: Any) -> bool:
    if isinstance(want, dict):
        return isinstance(got, dict) and all(k in got and _is_subset(v, got[k]) for k, v in want.items())
    return want == got


@register_metric("compare_config", options=("containment_ok",))
def compare_config(result: Any, expected: Any, **options: Any) -> float:
    """1 when the file holds ``rules["expected"]`` as a JSON subset, else as a substring."""
    if not result or not expected.get("expected"):
        return 0.0
    text, want = _read(result, "compare_config"), expected["expected"]
    if options.get("containment_ok", True):
        try:
            return float(_is_subset(json.loads(want), json.loads(text)))
        except ValueError:
            return float(want.strip() in text)
    if text == want:
        return 1.0
    try:
        return float(json.loads(text) == json.loads(want))
    except ValueError:
        return 0.0


@register_metric("is_extension_installed")
def is_extension_installed(result: Any, expected: Any, **options: Any) -> float:
    """``contain``: 1 when ``rules["expected"]`` is in the output; ``not_contain``: when it is not."""
    inside = expected["expected"] in result
    return float(inside if expected["type"] == "contain" else not inside)


def _url(result: Any) -> str | None:
    if isinstance(result, str):
        return result
    if isinstance(result, Mapping) and "url" in result:
        return str(result["url"])
    return None


@register_metric("is_expected_url_pattern_match")
def is_expected_url_pattern_match(result: Any, expected: Any, **options: Any) -> float:
    """1 when every regex of ``rules["expected"]`` is found in the url (a string, or a dict's ``url``)."""
    url = _url(result) if result else None
    if url is None:
        return 0.0
    return float(all(re.search(p, url) for p in expected["expected"]))


@register_metric("is_expected_search_query")
def is_expected_search_query(result: Any, expected: Any, **options: Any) -> float:
    """1 when ``rules["expect"]["pattern"]`` is found in the active tab's url."""
    if not result:
        return 0.0
    return float(re.search(expected["expect"]["pattern"], result["url"]) is not None)


@register_metric("is_utc_0")
def is_utc_0(result: Any, expected: Any, **options: Any) -> float:
    """1 when the 4th line of ``timedatectl`` output (the time zone) ends with ``+0000)``."""
    lines = str(result).split("\n")
    if len(lines) < 4:
        raise ZeroScore("is_utc_0: fewer than 4 lines of timedatectl output (OSWorld raises)")
    return float(lines[3].endswith("+0000)"))


@register_metric("check_gnome_favorite_apps")
def check_gnome_favorite_apps(result: Any, expected: Any, **options: Any) -> float:
    """1 when gsettings' favourite-apps list has exactly the expected apps, in any order."""
    try:
        apps = ast.literal_eval(str(result).strip())  # OSWorld eval()s the gsettings output
    except (ValueError, SyntaxError) as exc:
        raise ZeroScore(
            f"check_gnome_favorite_apps: not a list literal (OSWorld raises): {result!r:.80}"
        ) from exc
    want = expected["expected"]
    return float(len(apps) == len(want) and set(apps) == set(want))


@register_metric("check_moved_jpgs")
def check_moved_jpgs(result: Any, expected: Any, **options: Any) -> float:
    """1 when the directory listing's children are exactly the expected names.

    No listing (the folder does not exist) is the agent's missing artefact: 0 (OSWorld raises).
    """
    if result is None:
        return 0.0
    names = [node["name"] for node in result["children"]]
    want = expected["expected"]
    return float(len(names) == len(want) and set(names) == set(want))
