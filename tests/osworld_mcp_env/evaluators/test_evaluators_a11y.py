"""``check_accessibility_tree`` on a hand-made tree, with the score OSWorld's function gives and why.

The expected scores were also checked by running OSWorld's own function on the same
inputs (outside this repository); they differ only where OSWorld crashes (a missing
file, a rule the task got wrong), which scores 0 or stops the evaluator here.
"""

from __future__ import annotations

import pytest
from osworld_mcp_env.errors import EvaluationError
from osworld_mcp_env.evaluators import METRICS, ZeroScore

check = METRICS.get("check_accessibility_tree").fn

ST = "https://accessibility.ubuntu.example.org/ns/state"
ATTR = "https://accessibility.ubuntu.example.org/ns/attributes"
TREE = f"""<desktop-frame xmlns:st="{ST}" xmlns:attr="{ATTR}">
  <application name="Thunderbird">
    <frame name="Write: Reminder" st:active="true">
      <tool-bar name="" attr:id="MsgHeadersToolbar">
        <label name="To"/>
        <section name="" attr:class="address-pill">
          <label name="fox@uni.edu" attr:class="pill-label"/>
        </section>
      </tool-bar>
      <entry name="Subject">Tuition reminder</entry>
      <page-tab-list attr:id="tabmail-tabs"><page-tab name="About Profiles"/></page-tab-list>
    </frame>
  </application>
</desktop-frame>"""


def test_xpath_rules_multiply_and_an_empty_selection_is_zero():
    found = {"xpath": "//application[@name='Thunderbird']//*[contains(@name, 'fox@uni.edu')]"}
    assert check(TREE, [found]) == 1.0
    # Namespaced attributes are reachable with OSWorld's prefixes.
    assert check(TREE, [{"xpath": "//tool-bar[@attr:id='MsgHeadersToolbar']"}, found]) == 1.0
    assert check(TREE, [found, {"xpath": "//*[contains(@name, 'iron@uni.edu')]"}]) == 0.0


def test_text_rules_exact_and_fuzzy():
    assert check(TREE, [{"xpath": "//entry", "text": "Tuition reminder", "exact": True}]) == 1.0
    assert check(TREE, [{"xpath": "//entry", "text": "Tuition reminders", "exact": True}]) == 0.0
    # Fuzzy: rapidfuzz's ratio / 100; "Tuition reminder" vs "Tuition reminders" = 2*16/33.
    fuzzy = check(TREE, [{"xpath": "//entry", "text": "Tuition reminders", "exact": False}])
    assert fuzzy == pytest.approx(32 / 33)
    # An element without text compares as None: ratio 0 (exact: "" == None is False too).
    assert check(TREE, [{"xpath": "//label[@name='To']", "text": "To", "exact": False}]) == 0.0
    assert check(TREE, [{"xpath": "//label[@name='To']", "text": "", "exact": True}]) == 0.0


def test_css_selectors_as_osworld_writes_them():
    pytest.importorskip("cssselect")
    pill = (
        'tool-bar[attr|id=MsgHeadersToolbar] label[name=To]~[attr|class="address-pill"]'
        '>label[attr|class="pill-label"][name*="fox@uni.edu"]'
    )
    assert check(TREE, [{"selectors": [pill]}]) == 1.0
    assert check(TREE, [{"selectors": [pill.replace("fox", "iron")]}]) == 0.0
    tab = (
        'application[name=Thunderbird] page-tab-list[attr|id="tabmail-tabs"]>page-tab[name="About Profiles"]'
    )
    assert check(TREE, [{"selectors": [tab]}]) == 1.0
    # Several selectors form one composite selector: either may match.
    assert check(TREE, [{"selectors": [pill.replace("fox", "iron"), tab]}]) == 1.0


def test_broken_inputs():
    # Not XML: lxml raises inside OSWorld; 0 with a reason here.
    with pytest.raises(ZeroScore):
        check("<desktop-frame><unclosed>", [{"xpath": "//x"}])
    # A rule with neither xpath nor selectors is the task's bug: OSWorld raises ValueError.
    with pytest.raises(EvaluationError):
        check(TREE, [{"text": "x"}])
    with pytest.raises(EvaluationError):
        check(TREE, [{"xpath": "//*[@"}])
