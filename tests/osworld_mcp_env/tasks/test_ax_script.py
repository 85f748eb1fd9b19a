"""Scripted ax solutions: names bound by ax.find, cited by ax.act, and every Calc/Writer template's route."""

from __future__ import annotations

import pytest
from osworld_mcp_env.ax.batch import parse_steps
from osworld_mcp_env.tasks.ax_script import RefBindings, UnboundRef, act, find, first_ref, op
from osworld_mcp_env.tasks.bundled import bundled_solution
from osworld_mcp_env.tasks.templates import TEMPLATES, instantiate

AX_DOMAINS = ("calc", "writer")
AX_TEMPLATES = [t for t in TEMPLATES.names() if TEMPLATES.get(t).domain in AX_DOMAINS]
FIND_RESULT = 'Read: 1 match(es):\ntable cell [e412] \'D3\' editable\n{"refs": ["e412"]}'


def test_a_find_binds_the_first_ref_its_result_shows_and_an_act_cites_it():
    bindings = RefBindings()
    lookup = find("D3", role="table cell", name="D3")
    assert lookup["arguments"] == {"role": "table cell", "name": "D3", "limit": 1}
    bindings.record(lookup, FIND_RESULT)
    call = bindings.resolve(act(op("set_text", "D3", text="=SUM(B2:B6)"), op("key", keys="ctrl+s")))
    assert call == {
        "name": "ax.act",
        "arguments": {"steps": [{"op": "set_text", "ref": "e412", "text": "=SUM(B2:B6)"},
                                {"op": "key", "keys": "ctrl+s"}]},
    }  # fmt: skip
    assert "bind" not in bindings.resolve(lookup)


def test_a_find_that_showed_no_ref_leaves_its_name_unbound():
    bindings = RefBindings()
    bindings.record(find("D3", name="D3"), FIND_RESULT)
    bindings.record(find("D3", name="D3"), "Error [desktop_error]: the worker died")
    with pytest.raises(UnboundRef, match=r"\$D3"):
        bindings.resolve(act(op("set_text", "D3", text="1")))
    assert first_ref("Read: No element matches.") is None
    assert first_ref("x [e7] then [e8]") == "e7"


@pytest.mark.parametrize("template_id", AX_TEMPLATES)
def test_every_calc_and_writer_instance_has_an_ax_route_of_valid_steps_on_bound_refs(template_id):
    for seed in range(4):
        script = bundled_solution(f"{template_id}@{seed}", "ax")
        assert {c["name"] for c in script} <= {"ax.find", "ax.act", "computer_use"}
        assert script[-1]["arguments"] == {"action": "terminate", "status": "success"}
        bindings = RefBindings()
        for n, call in enumerate(script[:-1]):
            if call["name"] == "ax.find":  # a distinct ref per find, as the worker gives
                bindings.record(call, f"Read: 1 match(es):\nx [e{100 + n}]")
                continue
            steps = bindings.resolve(call)["arguments"]["steps"]
            assert len(parse_steps(steps)) == len(steps)
        assert script[-2]["arguments"]["steps"][-1] == {"op": "key", "keys": "ctrl+s"}


def test_the_calc_route_sets_each_target_cell_found_by_its_address():
    # calc-row-product@3: header "Product" in C1 and =A<r>*B<r> in C2:C5 (four data rows).
    script = bundled_solution("calc-row-product@3", "ax")
    finds = [c["arguments"] for c in script if c["name"] == "ax.find"]
    assert finds == [{"role": "table cell", "name": f"C{r}", "limit": 1} for r in range(1, 6)]
    steps = script[-2]["arguments"]["steps"]
    assert [(s.get("ref"), s.get("text")) for s in steps[:-1]] == [("$C1", "Product")] + [
        (f"$C{r}", f"=A{r}*B{r}") for r in range(2, 6)
    ]


def test_the_writer_routes_rewrite_changed_paragraphs_or_key_at_one():
    instance = instantiate("writer-replace-all", 2)
    old, new = "Kestrel", "Cedar"
    assert old in instance.task["instruction"] and new in instance.task["instruction"]
    texts = [c["arguments"]["text"] for c in instance.ax or [] if c["name"] == "ax.find"]
    assert texts == [
        "Release notes for Kestrel", "This version of Kestrel loads files faster.",
        "Users of Kestrel can now export tables."]  # fmt: skip
    sets = [s["text"] for s in (instance.ax or [])[-2]["arguments"]["steps"][:-1]]
    assert sets == [t.replace(old, new) for t in texts]
    delete = bundled_solution("writer-delete-paragraph@2", "ax")
    assert delete[1]["arguments"]["steps"][:2] == [
        {"op": "set_text", "ref": "$p", "text": ""},
        {"op": "key", "ref": "$p", "keys": "Delete"},
    ]


def test_templates_of_other_apps_have_no_ax_route():
    others = [t for t in TEMPLATES.names() if TEMPLATES.get(t).domain not in AX_DOMAINS]
    assert others
    for template_id in others:
        assert instantiate(template_id, 1).ax is None
    with pytest.raises(Exception, match="not reached by the ax channel alone"):
        bundled_solution("os-write-file", "ax")
