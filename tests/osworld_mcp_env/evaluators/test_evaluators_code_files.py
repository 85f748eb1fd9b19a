"""Code, result-file, keybinding and clipboard metrics on hand-made files, with OSWorld's verdicts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from osworld_mcp_env.errors import EvaluationError
from osworld_mcp_env.evaluators import METRICS, ZeroScore

pure_text = METRICS.get("compare_python_pure_text").fn
result_files = METRICS.get("compare_result_files").fn
keybindings = METRICS.get("check_json_keybindings").fn
clipboard = METRICS.get("is_in_vm_clickboard").fn


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_python_pure_text_ignores_every_whitespace_character(tmp_path: Path):
    gold = write(tmp_path, "gold.py", "import torch\n\ndef f(x):\n    return x + 1\n")
    reflowed = write(tmp_path, "a.py", "import torch\ndef f(x):\n\treturn x+1  \n\n\n")
    assert pure_text(reflowed, gold) == 1.0
    commented = write(tmp_path, "b.py", "import torch\n# a note\ndef f(x):\n    return x + 1\n")
    assert pure_text(commented, gold) == 0.0
    assert pure_text(None, gold) == 0.0
    with pytest.raises(ZeroScore, match="OSWorld raises"):
        pure_text(str(tmp_path / "missing.py"), gold)


def test_result_files_numbers_within_1e_4_or_contained_text(tmp_path: Path):
    gold = write(tmp_path, "gold.txt", "42.5\n")
    assert result_files(write(tmp_path, "a.txt", "42.50003"), gold) == 1.0
    assert result_files(write(tmp_path, "b.txt", "42.4998"), gold) == 0.0
    # The containment test comes first: "42.5002" holds "42.5", so it passes, as in OSWorld.
    assert result_files(write(tmp_path, "b2.txt", "42.5002"), gold) == 1.0
    # The gold number's text inside a sentence passes; the same value written otherwise does not.
    assert result_files(write(tmp_path, "c.txt", "The answer is 42.5."), gold) == 1.0
    assert result_files(write(tmp_path, "d.txt", "The answer is 85/2."), gold) == 0.0
    words = write(tmp_path, "gold2.txt", "Paris\n")
    assert result_files(write(tmp_path, "e.txt", "  Paris "), words) == 1.0
    assert result_files(write(tmp_path, "f.txt", "The capital is Paris"), words) == 0.0
    assert result_files(None, gold) == 0.0


BINDING = {"key": "ctrl+j", "command": "workbench.action.focusActiveEditorGroup", "when": "terminalFocus"}


def test_keybindings_with_vs_codes_comment_header(tmp_path: Path):
    rule = {"expected": BINDING}
    header = "// Place your key bindings in this file to override the defaults\n"
    other = {"key": "ctrl+k", "command": "x"}
    assert (
        keybindings(write(tmp_path, "k1.json", header + json.dumps([other, BINDING], indent=4)), rule) == 1.0
    )
    assert keybindings(write(tmp_path, "k2.json", json.dumps([BINDING])), rule) == 1.0
    # The binding must be equal as a whole: an extra field or another "when" fails.
    assert keybindings(write(tmp_path, "k3.json", json.dumps([{**BINDING, "args": 1}])), rule) == 0.0
    # Comments beyond the first line make it no JSON: 0, as OSWorld's loaders score it.
    two_comments = header + "// mine\n" + json.dumps([BINDING])
    assert keybindings(write(tmp_path, "k4.json", two_comments), rule) == 0.0
    assert keybindings(write(tmp_path, "k5.json", json.dumps({"bindings": [BINDING]})), rule) == 0.0
    assert keybindings(str(tmp_path / "missing.json"), rule) == 0.0
    with pytest.raises(EvaluationError):
        keybindings(str(tmp_path / "k2.json"), {"binding": BINDING})


def test_clipboard_holds_the_expected_text_with_osworlds_argument_order():
    rule = {"expected": "/home/user/Data3/List3/secret.docx"}
    assert clipboard(rule, "/home/user/Data3/List3/secret.docx\n") == 1.0
    assert clipboard(rule, "/home/user/Data3/List3/") == 0.0
    assert clipboard({"expected": ["a.txt", "b.txt"]}, "a.txt b.txt") == 1.0
    assert clipboard({"expected": ["a.txt", "c.txt"]}, "a.txt b.txt") == 0.0
    with pytest.raises(ZeroScore):
        clipboard(rule, None)  # the command gave no output: OSWorld's TypeError
