"""The terminal-typing rule on recorded-shaped steps: which steps form a run, and the command read back."""

import pytest
from hybrid_agent.rewrite import RewriteError, RewriteReason, TerminalRun, terminal_runs
from hybrid_agent.rewrite.episode import source_steps
from rewrite_records import CALC, WRITER, gui, line, record

CREATE = "mkdir -p /home/user/projects && printf 'Hello OSWorld\\n' > /home/user/projects/hello.txt"


def runs(tmp_path, *lines):
    return terminal_runs(source_steps(record(tmp_path / "e.jsonl", list(lines))))


def test_the_bundled_oracle_click_type_enter_is_one_run(tmp_path):
    """os-create-file's GUI oracle: the focusing click, the typed command and Enter go; the wait stays."""
    found = runs(
        tmp_path,
        line(gui("left_click", coordinate=[960, 540], frame_id=1)),
        line(gui("type", text=CREATE)),
        line(gui("key", keys=["Return"])),
        line(gui("wait", time=0.5)),
        line(gui("terminate", status="success")),
    )
    assert found == [TerminalRun(0, 3, CREATE)]


def test_the_shortcut_opens_a_terminal_and_fragments_join_into_one_command(tmp_path):
    """Ctrl+Alt+T from a document, a wait for the window, two fragments, a typo erased, Enter in the text."""
    found = runs(
        tmp_path,
        line(gui("key", keys=["ctrl", "alt", "t"]), WRITER),
        line(gui("wait", time=2), WRITER),
        line(gui("type", text="mkdir -p /home/user/projects && ")),
        line(gui("type", text="printf 'Hello OSWorld\\n' > /home/user/projects/hello.txtt")),
        line(gui("key", keys=["BackSpace"])),
        line(gui("key", keys=["Return"])),
        line(gui("wait", time=1)),
        line(gui("terminate", status="success")),
    )
    assert found == [TerminalRun(0, 6, CREATE)]


def test_submitted_lines_of_one_run_are_one_command_and_dropped_lines_vanish(tmp_path):
    found = runs(
        tmp_path,
        line(gui("type", text="cd /tmp\nrm -rf /")),  # the second line is not submitted: Ctrl+U drops it
        line(gui("key", keys=["ctrl", "u"])),
        line(gui("type", text="oops")),
        line(gui("key", keys=["ctrl", "c"])),
        line(gui("type", text="ls > out.txt\n\n")),  # an empty line submits nothing
    )
    assert found == [TerminalRun(0, 5, "cd /tmp\nls > out.txt")]


def test_typing_in_a_document_and_genuine_gui_steps_are_no_run(tmp_path):
    found = runs(
        tmp_path,
        line(gui("left_click", coordinate=[156, 231]), CALC),
        line(gui("type", text="=SUM(A1:A5)\n"), CALC),
        line(gui("key", keys=["ctrl", "s"]), CALC),
        line(gui("left_click", coordinate=[500, 500]), WRITER),
        line(gui("type", text="Hello\n"), WRITER),
    )
    assert found == []


def test_a_click_not_followed_by_terminal_typing_stays_and_runs_split_at_gui_steps(tmp_path):
    found = runs(
        tmp_path,
        line(gui("type", text="touch a\n")),
        line(gui("left_click", coordinate=[100, 100]), CALC),  # into Calc: no terminal typing after it
        line(gui("type", text="5\n"), CALC),
        line(gui("left_click", coordinate=[960, 540]), CALC),  # back into the terminal: focus click
        line(gui("type", text="touch b\n")),
    )
    assert found == [TerminalRun(0, 1, "touch a"), TerminalRun(3, 5, "touch b")]


def test_a_record_without_window_titles_falls_back_to_the_terminal_app(tmp_path):
    found = runs(
        tmp_path,
        line(gui("type", text="ls\n"), ("os", None)),
        line(gui("type", text="Hello\n"), ("libreoffice_writer", None)),
    )
    assert found == [TerminalRun(0, 1, "ls")]


@pytest.mark.parametrize(
    ("steps", "why"),
    [
        ([line(gui("type", text="cat READ\tME\n"))], "Tab"),
        (
            [line(gui("type", text="ls")), line(gui("key", keys=["Up"])), line(gui("key", keys=["Return"]))],
            "Key up",
        ),
        ([line(gui("type", text="ls -l")), line(gui("terminate", status="success"))], "never submitted"),
        ([line(gui("type", text="ls\n")), line(gui("type", text="pwd"))], "never submitted"),
    ],
)
def test_a_command_that_cannot_be_read_back_is_unreconstructable(tmp_path, steps, why):
    with pytest.raises(RewriteError, match=why) as raised:
        runs(tmp_path, *steps)
    assert raised.value.reason is RewriteReason.UNRECONSTRUCTABLE
