"""Thunderbird metrics on hand-made ``prefs.js`` and ``msgFilterRules.dat``, with OSWorld's score and why.

The expected scores were also checked by running OSWorld's own function on the same
inputs (outside this repository); they differ only where OSWorld crashes (a missing
file, a rule the task got wrong), which scores 0 or stops the evaluator here.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from osworld_mcp_env.evaluators import METRICS, ZeroScore

prefs = METRICS.get("check_thunderbird_prefs").fn
filters = METRICS.get("check_thunderbird_filter").fn

PREFS = """\
// Mozilla User Preferences
user_pref("mail.identity.id1.auto_quote", true);
user_pref("mail.identity.id1.htmlSigText", "Anonym\\nXYZ Lab");
user_pref("extensions.activeThemeID", "thunderbird-compact-dark@mozilla.org");
user_pref("mail.server.default.autosync_offline_stores", true);
user_pref("mail.identity.id1.auto_quote", false);
"""


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_prefs_values_are_json_and_the_last_line_wins(tmp_path: Path):
    path = write(tmp_path, "prefs.js", PREFS)
    # auto_quote is set twice; the later `false` decides.
    assert prefs(path, {"expect": {"mail.identity.id1.auto_quote": {"method": "eq", "ref": False}}}) == 1.0
    # The signature's "\\n" is a JSON escape: the value holds a real newline, which re.S spans.
    sig = {"mail.identity.id1.htmlSigText": {"method": "re.S", "ref": "Anonym\nXYZ Lab"}}
    assert prefs(path, {"expect": sig}) == 1.0
    assert prefs(path, {"expect": {"extensions.activeThemeID": {"method": "re", "ref": "dark"}}}) == 1.0
    # A pref no line sets fails its expect rule.
    assert prefs(path, {"expect": {"mail.imap.use_status_for_biff": {"method": "eq", "ref": False}}}) == 0.0
    # An unexpect rule that holds fails the check.
    unexpect = {"mail.server.default.autosync_offline_stores": {"method": "eq", "ref": True}}
    assert prefs(path, {"unexpect": unexpect}) == 0.0
    # A key in both maps counts for expect only.
    both = {"expect": {"extensions.activeThemeID": {"method": "re", "ref": "dark"}}}
    both["unexpect"] = {"extensions.activeThemeID": {"method": "re", "ref": "dark"}}
    assert prefs(path, both) == 1.0
    assert prefs(None, {"expect": {}}) == 0.0


def test_prefs_that_osworld_cannot_parse(tmp_path: Path):
    # A value that is not JSON (a bare word): json.loads raises inside OSWorld.
    path = write(tmp_path, "prefs.js", 'user_pref("a", yes);\n')
    with pytest.raises(ZeroScore):
        prefs(path, {"expect": {"a": {"method": "eq", "ref": "yes"}}})
    # A regex rule on a boolean value raises too.
    path = write(tmp_path, "prefs.js", 'user_pref("a", true);\n')
    with pytest.raises(ZeroScore):
        prefs(path, {"expect": {"a": {"method": "re", "ref": "t"}}})


RULES = """\
version="9"
logging="no"
name="Promotions"
enabled="yes"
type="17"
action="Move to folder"
actionValue="mailbox://nobody@Local%20Folders/Promotions"
condition="AND (subject,contains,discount)"
name="Forward all"
enabled="no"
type="17"
action="Forward"
actionValue="anonym-x2024@gmail.com"
condition="ALL"
name="Half written"
enabled="yes"
"""


def test_filters_match_records_of_their_fields(tmp_path: Path):
    path = write(tmp_path, "msgFilterRules.dat", RULES)
    move = {
        "enabled": "yes",
        "action": "Move to folder",
        "actionValue": "mailbox://nobody@Local%20Folders/Promotions",
        "condition": ["AND (subject,contains,discount)"],
    }
    assert filters(path, {"expect": [move]}) == 1.0
    # The forward filter exists but is disabled.
    forward = {
        "enabled": "yes",
        "action": "Forward",
        "actionValue": "anonym-x2024@gmail.com",
        "condition": ["ALL"],
    }
    assert filters(path, {"expect": [forward]}) == 0.0
    assert filters(path, {"expect": [{**forward, "enabled": "no"}]}) == 1.0
    # A filter without a condition line is never collected.
    assert filters(path, {"expect": [{"name": "Half written"}]}) == 0.0
    assert filters(path, {"expect": [move], "unexpect": [{"action": "Forward"}]}) == 0.0


def test_filter_conditions_and_escapes(tmp_path: Path):
    text = 'name="Say \\"hi\\""\nenabled="yes"\n'
    text += 'condition="OR (from,is,a@b.c) OR (subject,contains,\\"x, y\\")"\n'
    path = write(tmp_path, "msgFilterRules.dat", text)
    record = {"name": 'Say "hi"', "condition": ["OR (from,is,a@b.c)", 'OR (subject,contains,"x, y")']}
    assert filters(path, {"expect": [record]}) == 1.0
    # The last line without a newline loses its last character to OSWorld's slicing.
    path = write(tmp_path, "msgFilterRules.dat", 'name="A"\ncondition="ALL"')
    assert filters(path, {"expect": [{"condition": ["ALL"]}]}) == 0.0
    assert filters(path, {"expect": [{"name": "A"}]}) == 1.0
    with pytest.raises(ZeroScore):
        filters(write(tmp_path, "orphan.dat", 'enabled="yes"\n'), {"expect": []})


folder = METRICS.get("check_thunderbird_folder").fn

MBOX = """\
From - Mon Jan  1 00:00:00 2024
X-Mozilla-Status: 0001
Subject: Invoice

Hello
From - Tue Jan  2 00:00:00 2024
X-Mozilla-Status: 0009
Subject: Receipt

Bye
"""


def test_folder_compares_only_the_blank_FROM_chunks_as_osworlds_loop_keeps_them(tmp_path: Path):
    # OSWorld skips every chunk with text, so two Thunderbird mboxes with different mail are equal.
    a = write(tmp_path, "Bills", MBOX)
    b = write(tmp_path, "gold", MBOX.replace("Invoice", "Something else"))
    assert folder(a, b) == 1.0
    assert folder([a, a], [b, b]) == 1.0
    # A file that starts with the upper-case separator keeps one blank chunk: different from none.
    upper = write(tmp_path, "upper", "FROM - x\nSubject: a\n")
    assert folder(upper, b) == 0.0
    assert folder(upper, write(tmp_path, "upper2", "FROM - y\n")) == 1.0
    # Two blank chunks are one after de-duplication (the default), two without it.
    twice = write(tmp_path, "twice", "FROM - FROM - x")
    assert folder(twice, upper) == 1.0
    assert folder(twice, upper, remove_duplicate=False) == 0.0


def test_folder_missing_result_and_unreadable_gold(tmp_path: Path):
    gold = write(tmp_path, "gold", MBOX)
    assert folder(None, gold) == 0.0
    assert folder([None], [gold]) == 0.0
    with pytest.raises(ZeroScore, match="OSWorld raises"):
        folder(gold, str(tmp_path / "missing"))
