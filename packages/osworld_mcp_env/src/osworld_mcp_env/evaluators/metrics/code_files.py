"""Metrics over files an agent writes with an editor or a shell: code, results, keybindings, the clipboard.

Scored as OSWorld's ``compare_python_pure_text``, ``compare_result_files``,
``check_json_keybindings`` and ``is_in_vm_clickboard`` score them. A file OSWorld opens
without a guard (so a missing one crashes its evaluation) scores 0 here with the reason
(:class:`ZeroScore`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from osworld_mcp_env.errors import EvaluationError
from osworld_mcp_env.evaluators.registry import ZeroScore, register_metric


def _read(path: Any, metric: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError, TypeError) as exc:
        raise ZeroScore(f"{metric}: cannot read {path!r} (OSWorld raises): {exc}") from exc


@register_metric("compare_python_pure_text")
def compare_python_pure_text(result: Any, expected: Any, **options: Any) -> float:
    """1 when the two files are equal once every whitespace character is removed."""
    if not result or not expected:
        return 0.0
    got, want = _read(result, "compare_python_pure_text"), _read(expected, "compare_python_pure_text")
    return float("".join(got.split()) == "".join(want.split()))


def _as_number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


@register_metric("compare_result_files")
def compare_result_files(result: Any, expected: Any, **options: Any) -> float:
    """1 when the result file says what the gold file says (both stripped).

    A numeric gold passes when its text occurs in the result (a sentence around the
    number is allowed) or the result is a number within 1e-4 of it; otherwise the
    texts must be equal. A non-numeric result beside a numeric gold fails, as in OSWorld
    (its equality fallback then compares a number's text with a sentence).
    """
    if not result or not expected:
        return 0.0
    got = _read(result, "compare_result_files").strip()
    want = _read(expected, "compare_result_files").strip()
    gold = _as_number(want)
    if gold is None:
        return float(got == want)
    if want in got:
        return 1.0
    value = _as_number(got)
    if value is None:
        return float(got == want)
    return float(abs(value - gold) < 1e-4)


def _keybindings(text: str) -> list[Any] | None:
    """The JSON list of the file, or of the file without its first line (VS Code's comment header)."""
    for candidate in (text, text.partition("\n")[2]):
        try:
            data = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(data, list):
            return data
    return None


@register_metric("check_json_keybindings")
def check_json_keybindings(result: Any, expected: Any, **options: Any) -> float:
    """1 when ``rules["expected"]`` (one binding) is an element of the keybindings file's list.

    The file is read as JSON, else without its first line (VS Code writes a ``//`` comment
    there); anything else, comments further down included, is not a list and scores 0.
    """
    if not isinstance(expected, Mapping) or "expected" not in expected:
        raise EvaluationError(f"check_json_keybindings: the rule needs 'expected', got {expected!r:.200}")
    if result is None:
        return 0.0
    try:
        with open(result, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError):
        return 0.0  # OSWorld's loaders catch everything and score 0
    bindings = _keybindings(text)
    return float(bindings is not None and expected["expected"] in bindings)


@register_metric("is_in_vm_clickboard")
def is_in_vm_clickboard(result: Any, expected: Any, **options: Any) -> float:
    """1 when the clipboard text holds ``rules["expected"]`` (a string, or every string of a list).

    OSWorld's argument order is reversed here: ``result`` is the rule, ``expected`` the
    clipboard (``xsel --clipboard --output``'s output).
    """
    if not isinstance(result, Mapping) or "expected" not in result:
        raise EvaluationError(f"is_in_vm_clickboard: the rule needs 'expected', got {result!r:.200}")
    if not isinstance(expected, str):
        raise ZeroScore(
            f"is_in_vm_clickboard: no clipboard text, got {type(expected).__name__} (OSWorld raises)"
        )
    wanted = result["expected"]
    if isinstance(wanted, list):
        return float(all(w in expected for w in wanted))
    return float(wanted in expected)
