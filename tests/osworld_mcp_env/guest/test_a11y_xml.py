"""The accessibility dump is XML that lxml and ``check_accessibility_tree`` read, with OSWorld's state names.

pyatspi's display names hold spaces (``has tooltip``); written as attribute names they
made the Calc and Writer trees invalid XML, so every parse failed and
``check_accessibility_tree`` scored 0 whenever a LibreOffice window was open.
"""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import lxml.etree
import pytest
from osworld_mcp_env.evaluators import evaluate
from osworld_mcp_env.evaluators.metrics.a11y import A11Y_NAMESPACES, check_accessibility_tree
from osworld_mcp_env.guest.a11y import NS, object_attributes, state_name, xml_text
from osworld_mcp_env.tasks import TaskContext, load_task


def test_state_names_are_osworlds_statetype_names_in_lower_case():
    assert state_name("STATE_HAS_TOOLTIP") == "has_tooltip"
    assert state_name("STATE_SUPPORTS_AUTOCOMPLETION") == "supports_autocompletion"
    assert state_name("STATE_SHOWING") == "showing"
    # A state newer than pyatspi's table still gives a valid XML name.
    assert (
        state_name("STATE_45") == "45"
        and lxml.etree.fromstring('<a xmlns:st="u" st:_45="true"/>') is not None
    )


def test_xml_text_drops_what_xml_cannot_hold_and_keeps_the_rest():
    title = "a\x00b\x07c\td\ne\rf\ud800g\ufffeh€"
    assert xml_text(title) == "abc\td\ne\rfgh€"
    element = lxml.etree.Element("frame", name=xml_text(title))
    assert lxml.etree.fromstring(lxml.etree.tostring(element)).get("name") == "abc\td\ne\rfgh€"


def test_object_attributes_are_written_in_the_attr_namespace_and_f5c13cdds_rule_selects_them():
    """Thunderbird's composer as the dump writes it: its rule selects on ``attr|id``, ``attr|class``."""
    assert object_attributes({"id": "x", "": "empty", "bad name": "v", "a:b": "v", "tag": "a\x00b"}) == {
        f"{{{NS['attr']}}}id": "x",
        f"{{{NS['attr']}}}tag": "ab",
    }
    toolbar = lxml.etree.Element("tool-bar", object_attributes({"id": "MsgHeadersToolbar"}), name="")
    lxml.etree.SubElement(toolbar, "label", name="To")
    pill = lxml.etree.SubElement(toolbar, "section", object_attributes({"class": "address-pill"}), name="")
    label = object_attributes({"class": "pill-label"})
    lxml.etree.SubElement(pill, "label", label, name="Fox <fox@someuniversity.edu>")
    rule = (
        'tool-bar[attr|id=MsgHeadersToolbar] label[name=To]~[attr|class="address-pill"]'
        '>label[attr|class="pill-label"][name*="fox@someuniversity.edu"]'
    )
    tree = lxml.etree.tostring(toolbar, encoding="unicode")
    assert check_accessibility_tree(tree, [{"selectors": [rule]}]) == 1.0
    assert check_accessibility_tree(tree, [{"selectors": [rule.replace("fox@", "iron@")]}]) == 0.0


# task -> a rule that holds only on that app's own window in the live tree.
WINDOW_RULES = {
    "calc-sum-column": [
        {"xpath": "//application[@name='soffice']/frame[@name='numbers.xlsx - LibreOffice Calc']"},
        # The Name Box: a state whose display name has a space, and its text.
        {"xpath": "//text[@st:single_line='true']", "text": "A1", "exact": True},
    ],
    "writer-replace-word": [
        {"xpath": "//application[@name='soffice']/frame[@name='report.docx - LibreOffice Writer']"},
        {"xpath": "//*[@st:has_tooltip='true'][@st:showing='true']"},
    ],
    "impress-set-title@0": [
        {"xpath": "//frame[@name='amber_budget.pptx - LibreOffice Impress'][@st:active='true']"},
        {"xpath": "//*[@st:multi_line='true']"},
    ],
    "os-create-file": [{"xpath": "//application[@name='xfce4-terminal']/frame[@st:active='true']"}],
}


@pytest.fixture(scope="module")
def env():
    environment = gym.make("osworld_mcp_env:OSWorldMCP-v0", enable_mcp=False)
    yield environment
    environment.close()


@pytest.mark.desktop
@pytest.mark.parametrize("task_id", list(WINDOW_RULES))
def test_the_apps_trees_parse_and_check_accessibility_tree_scores_their_window(env, task_id, tmp_path: Path):
    env.reset(options={"task": task_id})
    desktop = env.unwrapped.desktop
    tree = lxml.etree.fromstring(desktop.accessibility_tree().encode())
    states = {
        name.split("}")[1]
        for e in tree.iter()
        for name in e.attrib
        if name.startswith("{" + A11Y_NAMESPACES["st"])
    }
    assert "showing" in states and not any(" " in s for s in states)
    rules = WINDOW_RULES[task_id]
    checked = {
        "id": "a11y-xml",
        "instruction": "x",
        "config": [],
        "evaluator": {
            "func": ["check_accessibility_tree", "check_accessibility_tree"],
            "result": [{"type": "accessibility_tree"}, {"type": "accessibility_tree"}],
            "expected": [
                {"type": "rule", "rules": rules},
                # The same rules on a window that is not there: 0, so the 1 above is earned.
                {"type": "rule", "rules": [{"xpath": "//frame[@name='no such window']"}, *rules]},
            ],
        },
    }
    verdict = evaluate(load_task(checked), desktop, TaskContext("a11y-xml", tmp_path))
    assert [c.score for c in verdict.checks] == [1.0, 0.0], [c.reason for c in verdict.checks]
