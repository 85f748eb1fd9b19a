"""``check_config_status`` on hand-made GIMP config files, with the score OSWorld's function gives and why.

The expected scores were also checked by running OSWorld's own function on the same
inputs (outside this repository); they differ only where OSWorld crashes (a missing
file, a rule the task got wrong), which scores 0 or stops the evaluator here.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from osworld_mcp_env.errors import EvaluationError
from osworld_mcp_env.evaluators import METRICS, ZeroScore

check = METRICS.get("check_config_status").fn

# The shape GIMP 2.10 writes: a comment header, one s-expression per setting, nested blocks.
SESSIONRC = """\
# GIMP sessionrc

(session-info "toplevel"
    (factory-entry "image-window")
    (position 201 120)
    (size 1024 768))
(hide-docks yes)
(single-window-mode yes)

# end of sessionrc
"""


def config(tmp_path: Path, text: str) -> str:
    path = tmp_path / "rc"
    path.write_text(text)
    return str(path)


def test_key_and_last_word_of_a_line(tmp_path: Path):
    path = config(tmp_path, SESSIONRC)
    assert check(path, {"key": "hide-docks", "value": "yes"}) == 1.0
    assert check(path, {"key": "single-window-mode", "value": "no"}) == 0.0
    # Nested lines count: "(position 201 120)" has key "position" and last word "120".
    assert check(path, {"key": "position", "value": "120"}) == 1.0
    # Trailing ")" are all stripped: "(size 1024 768))" ends in "768".
    assert check(path, {"key": "size", "value": "768"}) == 1.0
    # A two-word key: the first two words, then the last one.
    assert check(path, {"key": ["session-info", '"toplevel"'], "value": '"toplevel"'}) == 1.0
    # Quotes are part of the word: the theme task's value is '"Light"'.
    theme = config(tmp_path, '(theme "Light")\n')
    assert check(theme, {"key": "theme", "value": '"Light"'}) == 1.0
    assert check(theme, {"key": "theme", "value": "Light"}) == 0.0


def test_missing_file_and_quirky_lines(tmp_path: Path):
    # The getter gives None when GIMP never wrote the file (it writes gimprc on quit, when changed).
    assert check(None, {"key": "theme", "value": '"Light"'}) == 0.0
    # Only a line equal to "\n" is skipped; a line of blanks has no first word: OSWorld raises.
    with pytest.raises(ZeroScore):
        check(config(tmp_path, '(theme "Dark")\n   \n'), {"key": "undo-levels", "value": "100"})
    # ...but a line that already matched comes first and wins.
    undo = {"key": "undo-levels", "value": "100"}
    assert check(config(tmp_path, "(undo-levels 100)\n   \n"), undo) == 1.0
    # A one-word line raises for a two-word key only once its first word matched (OSWorld's `and`).
    two = {"key": ["session-info", "x"], "value": "y"}
    assert check(config(tmp_path, "(other)\n"), two) == 0.0
    with pytest.raises(ZeroScore):
        check(config(tmp_path, "(session-info)\n"), two)
    with pytest.raises(EvaluationError):
        check(config(tmp_path, "(a b)\n"), {"key": "a"})
