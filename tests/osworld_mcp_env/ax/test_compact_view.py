"""The compact view and the diff over hand-built records: what is dropped, condensed and kept."""

from osworld_mcp_env.ax.compact import describe, diff, render
from osworld_mcp_env.ax.records import Record


def rec(ref, role, name="", parent=None, children=(), **kw):
    return Record(
        ref=ref, pid=7, start=1, window="e1", path=[], role=role, name=name,
        states=kw.pop("states", ["enabled", "showing"]), bounds=[0, 0, 10, 10],
        ops=kw.pop("ops", ["press"]), parent=parent, children=list(children), **kw,
    )  # fmt: skip


def window_with_toolbar_and_duplicate_menu():
    buttons = [rec(f"e{10 + i}", "push button", f"B{i}", parent="e3") for i in range(41)]
    return [
        rec("e1", "frame", "Doc - Writer", children=["e2", "e5"], ops=[]),
        rec("e2", "panel", children=["e3"], ops=[]),  # a wrapper: dropped
        rec("e3", "tool bar", "Standard", parent="e2", children=[b.ref for b in buttons], ops=[]),
        *buttons,
        rec("e5", "panel", children=["e6", "e60"], ops=[]),
        rec("e6", "menu bar", parent="e5", children=["e7", "e8"], ops=[]),
        rec("e7", "menu", "File", parent="e6"),
        rec("e8", "menu", "Edit", parent="e6"),
        rec("e60", "menu bar", parent="e5", children=["e61", "e62"], ops=[]),
        rec("e61", "menu", "File", parent="e60", text="File"),
        rec("e62", "menu", "Edit", parent="e60", text="Edit"),
    ]


def test_a_toolbar_of_41_buttons_is_one_line_with_every_ref():
    view = render(window_with_toolbar_and_duplicate_menu(), "e1")
    toolbar = [line for line in view.splitlines() if "'Standard'" in line]
    assert len(toolbar) == 1
    assert all(f"B{i}[e{10 + i}]" in toolbar[0] for i in range(41))


def test_wrappers_are_dropped_and_a_repeated_subtree_is_printed_once():
    view = render(window_with_toolbar_and_duplicate_menu(), "e1")
    assert "panel" not in view
    assert "menu bar [e6]: File[e7] Edit[e8]" in view
    assert "menu bar [e60]: same as [e6]" in view
    assert "e61" not in view  # still bound and findable, not printed twice


def test_geometry_stays_out_of_the_text_and_states_show_as_words():
    records = window_with_toolbar_and_duplicate_menu()
    records[3].states = ["checked", "enabled"]
    records[4].states = ["showing"]  # no enabled state: an operation it offers is disabled
    view = render(records, "e1")
    assert "B0[e10] (on)" in view and "B1[e11] (disabled)" in view
    assert "10, 10" not in view and "bounds" not in view


def test_max_lines_cuts_and_says_how_to_reach_the_rest():
    records = [rec("e1", "frame", "W", children=[f"e{i}" for i in range(2, 12)], ops=[])]
    for i in range(2, 12):
        records.append(rec(f"e{i}", "panel", f"P{i}", parent="e1", children=[f"e{100 + i}"], ops=[]))
        records.append(rec(f"e{100 + i}", "push button", f"X{i}", parent=f"e{i}"))
    view = render(records, "e1", max_lines=5).splitlines()
    assert len(view) == 6 and view[-1].startswith("… 6 more lines: ax.find")


def test_a_big_table_shows_its_size_visible_range_and_cells():
    table = rec("e40", "table", "Sheet Sheet1", children=["e41", "e42"], ops=[],
                table={"rows": 1048576, "columns": 16384, "visible": "A1:X42"})  # fmt: skip
    cells = [
        rec("e41", "table cell", "A1", parent="e40", text="12", cell="A1", states=["enabled", "focused"]),
        rec("e42", "table cell", "A2", parent="e40", text="7", cell="A2"),
    ]
    view = render([rec("e1", "frame", "S", children=["e40"], ops=[]), table, *cells], "e1")
    assert "table [e40] 'Sheet Sheet1' 1048576x16384 visible A1:X42: A1[e41]=12 (focused) A2[e42]=7" in view


def test_the_diff_names_changed_new_and_gone_refs():
    before = {r.ref: r for r in window_with_toolbar_and_duplicate_menu()}
    after_list = window_with_toolbar_and_duplicate_menu()
    after_list[3].states = ["enabled", "showing", "checked"]
    after_list.append(rec("e300", "dialog", "Save As"))
    after = {r.ref: r for r in after_list if r.ref != "e8"}
    lines = diff(before, after)
    assert lines[0] == "~[e10] 'B0' states +checked"
    assert "+[e300] dialog 'Save As'" in lines and "-[e8] menu 'Edit'" in lines
    assert len(lines) == 3


def test_describe_marks_editable_text():
    field = rec("e9", "text", "Name Box", text="A1", states=["editable", "enabled"], ops=["set_text"])
    assert describe(field) == "text [e9] 'Name Box' = 'A1' editable"


def test_a_screen_full_of_cells_prints_sixty_and_counts_the_rest():
    cells = [rec(f"e{100 + i}", "table cell", f"A{i + 1}", parent="e40", text=str(i), cell=f"A{i + 1}")
             for i in range(500)]  # fmt: skip
    table = rec("e40", "table", "Sheet", children=[c.ref for c in cells], ops=[],
                table={"rows": 1048576, "columns": 16384, "visible": "A1:A500"})  # fmt: skip
    view = render([rec("e1", "frame", "S", children=["e40"], ops=[]), table, *cells], "e1")
    assert "A60[e159]=59" in view and "A61[" not in view and "… 440 more cells" in view
    assert len(view) < 1500


def test_a_cell_address_finds_that_cell_only_and_other_names_match_by_part():
    from osworld_mcp_env.ax.worker import _matches

    b1, b10 = (rec(f"e{n}", "table cell", a, cell=a) for n, a in ((2, "B1"), (3, "B10")))
    assert [r.cell for r in (b1, b10) if _matches(r, {"name": "b1"})] == ["B1"]  # not B10 too
    assert _matches(rec("e4", "push button", "Bold"), {"name": "bol"})
    assert not _matches(rec("e5", "push button", "B1 tab"), {"name": "B2"})
