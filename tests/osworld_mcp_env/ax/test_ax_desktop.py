"""The semantic channel on the real desktop: real LibreOffice, real AT-SPI, through ``env.step``.

``stopped_at`` counts steps from 0 (the brief's "step 3 of 5" is ``stopped_at == 2``).
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import pytest

pytestmark = [pytest.mark.desktop, pytest.mark.timeout(600)]
ENV_ID = "osworld_mcp_env:OSWorldMCP-v0"
BUDGET_CHARS = 1500 * 4  # 1,500 tokens at 4 characters each
REF = re.compile(r"\[(e\d+)\]")


@pytest.fixture(scope="module")
def env() -> Iterator[gym.Env]:
    """One env with the ax tools; a step may wait out the batch's whole 60 s of waiting."""
    e = gym.make(ENV_ID, ax_tools=True, step_timeout_s=90.0)
    yield e
    e.close()


def step(env: gym.Env, tool: str, **arguments: Any) -> tuple[str, dict[str, Any]]:
    obs, _reward, _term, _trunc, info = env.step({"name": tool, "arguments": arguments})
    return obs["tool_result"], info


def observe(env: gym.Env, **arguments: Any) -> str:
    """The view alone: the tool's text less its header line and its JSON data line."""
    text, info = step(env, "ax.observe", **arguments)
    assert "error" not in info, info["error"]
    assert text.startswith("Read: View of [e")
    return "\n".join(text.splitlines()[1:-1])


def ref_of(view: str, label: str) -> str:
    """The ref printed right after ``label`` (``Bold[e184]``) or after ``role [eN] 'label'``."""
    match = re.search(re.escape(label) + r"\[(e\d+)\]", view) or re.search(
        r"\[(e\d+)\] '" + re.escape(label) + "'", view
    )
    assert match, f"{label!r} not in the view:\n{view}"
    return match.group(1)


def document_bytes(env: gym.Env, path: str) -> bytes | None:
    return env.unwrapped._episode.desktop.read_file(path)


def damage_count(env: gym.Env) -> int | None:
    return env.unwrapped._episode.desktop.client.focus().changes


@pytest.mark.parametrize(("task", "app"), [("calc-sum-column", "Calc"), ("writer-replace-word", "Writer")])
def test_the_main_window_view_fits_the_budget_and_every_ref_in_it_resolves(env, task, app):
    _obs, info = env.reset(options={"task": task})
    assert {"ax.observe", "ax.find", "ax.act"} <= {t["name"] for t in info["tools"]}
    text, _info = step(env, "ax.observe")
    assert len(text) <= BUDGET_CHARS, len(text)  # all the model reads, header and data line included
    view = observe(env)
    assert f"LibreOffice {app}" in view.splitlines()[0]
    refs = sorted(set(REF.findall(view)), key=lambda r: int(r[1:]))
    assert len(refs) > 50
    for start in range(0, len(refs), 64):  # a ref is resolvable when a wait for it is met at once
        batch = [{"wait": "ref", "ref": r, "timeout_s": 2} for r in refs[start : start + 64]]
        text, info = step(env, "ax.act", steps=batch)
        assert "error" not in info, info["error"]
    again = observe(env)
    assert REF.findall(again)[:20] == REF.findall(view)[:20]  # the same live elements, the same refs


def test_set_value_on_a_push_button_is_unsupported_and_sends_nothing(env):
    env.reset(options={"task": "calc-sum-column"})
    save = ref_of(observe(env), "Save")
    before = damage_count(env)
    _text, info = step(env, "ax.act", steps=[{"op": "set_value", "ref": save, "value": 1}])
    error = info["error"]
    assert error["code"] == "unsupported_operation" and error["failure_phase"] == "precondition"
    assert error["input_events_emitted"] is False and error["stopped_at"] == 0
    assert damage_count(env) == before


def test_a_ref_of_a_closed_dialog_is_stale_and_nothing_reaches_the_document(env):
    """In Calc: Writer's blinking caret moves the damage counter with no input at all."""
    env.reset(options={"task": "calc-sum-column"})
    doc = "/home/user/numbers.xlsx"
    _text, info = step(
        env, "ax.act", steps=[{"op": "key", "keys": "ctrl+shift+s"}, {"wait": "window", "name": "Save"}]
    )
    assert "error" not in info, info["error"]
    dialog = observe(env)
    assert dialog.startswith("file chooser") or "Save" in dialog.splitlines()[0], dialog[:300]
    cancel = ref_of(dialog, "Cancel")
    _text, info = step(env, "ax.act", steps=[{"op": "key", "keys": "Escape"}, {"wait": "stable", "ms": 400}])
    assert "error" not in info, info["error"]
    assert "Calc" in observe(env, max_lines=5).splitlines()[0]
    before_bytes, before_damage = document_bytes(env, doc), damage_count(env)
    _text, info = step(env, "ax.act", steps=[{"op": "press", "ref": cancel}])
    error = info["error"]
    assert error["code"] == "stale_element_ref" and error["failure_phase"] == "precondition"
    assert error["input_events_emitted"] is False
    assert document_bytes(env, doc) == before_bytes and damage_count(env) == before_damage


def test_a_batch_stops_at_its_stale_step_and_never_runs_the_rest(env):
    env.reset(options={"task": "writer-replace-word"})
    view = observe(env)
    bold, italic = ref_of(view, "Bold"), ref_of(view, "Italic")
    steps = [
        {"op": "toggle", "ref": italic},
        {"op": "toggle", "ref": italic},
        {"op": "press", "ref": "e999999"},  # never bound: stale
        {"op": "toggle", "ref": bold},
        {"op": "type", "text": "zzz"},
    ]
    text, info = step(env, "ax.act", steps=steps)
    error = info["error"]
    assert error["code"] == "stale_element_ref" and error["stopped_at"] == 2 and error["completed"] == 2
    assert "0. toggle" in text and "1. toggle" in text and "3. " not in text
    found, _ = step(env, "ax.find", text="zzz")
    assert found.startswith("Read: No element matches"), found
    after = observe(env)
    assert f"Bold[{bold}] (on)" not in after and "'Bold' (on)" not in after


def test_toggling_bold_shows_in_the_diff_with_a_confirmed_state_change(env):
    env.reset(options={"task": "writer-replace-word"})
    bold = ref_of(observe(env), "Bold")
    text, info = step(env, "ax.act", steps=[{"op": "toggle", "ref": bold}])
    assert "error" not in info, info["error"]
    assert f"0. toggle [{bold}]: delivered, invoked, state_change confirmed" in text
    assert re.search(rf"~\[{bold}\] 'Bold' states [^\n]*\+(checked|pressed)", text), text


def test_a_wait_for_the_save_dialog_is_met_and_impossible_waits_end_at_the_shared_budget(env):
    env.reset(options={"task": "calc-sum-column"})
    text, info = step(
        env,
        "ax.act",
        steps=[{"op": "key", "keys": "ctrl+shift+s"}, {"wait": "window", "name": "Save", "timeout_s": 20}],
    )
    assert "error" not in info, info["error"]
    assert "opened: file chooser 'Save'" in text
    step(env, "ax.act", steps=[{"op": "key", "keys": "Escape"}])
    impossible = {"wait": "query", "name": "no element is named like this", "timeout_s": 30, "optional": True}
    started = time.monotonic()
    _text, info = step(env, "ax.act", steps=[impossible] * 3)
    spent = time.monotonic() - started
    error = info["error"]
    assert error["code"] == "wait_budget_exhausted" and error["stopped_at"] == 1
    assert error["input_events_emitted"] is False
    assert 59.0 <= spent <= 66.0, spent


def test_a_worker_killed_mid_batch_is_an_error_value_and_the_next_call_and_reset_are_clean(env):
    env.reset(options={"task": "calc-sum-column"})
    observe(env)
    desktop = env.unwrapped._episode.desktop
    pids = desktop.execute(["pgrep", "-f", "osworld_mcp_env.ax.worker"]).output.split()
    assert len(pids) == 1

    stepped = threading.Event()

    def kill_every_worker() -> None:
        # Whenever during the batch a worker runs (the first, or one started in its place), kill it.
        while not stepped.wait(0.2):
            for pid in desktop.execute(["pgrep", "-f", "osworld_mcp_env.ax.worker"]).output.split():
                desktop.execute(["kill", "-9", pid])

    killer = threading.Thread(target=kill_every_worker)
    killer.start()
    try:
        _text, info = step(env, "ax.act", steps=[{"wait": "query", "name": "never there", "timeout_s": 20}])
    finally:
        stepped.set()
        killer.join()
    assert info["error"]["code"] == "desktop_error" and info["error"]["stopped_at"] == 0
    assert "Calc" in observe(env, max_lines=5).splitlines()[0]  # a new worker answers
    _obs, info = env.reset(options={"task": "calc-sum-column"})
    assert "error" not in info
    assert "Calc" in observe(env, max_lines=5).splitlines()[0]


def test_libreoffice_killed_mid_batch_stops_it_with_an_error_value_and_the_next_reset_is_clean(env):
    env.reset(options={"task": "calc-sum-column"})
    observe(env)
    desktop = env.unwrapped._episode.desktop
    assert desktop.execute(["pgrep", "-x", "soffice.bin"]).output.split()
    stepped, killed = threading.Event(), []

    def kill_the_office_once_the_batch_opened_its_dialog() -> None:
        # The batch's first step opens the Save dialog: once that window shows, the batch runs.
        while not stepped.wait(0.1):
            if any(w.title == "Save" for w in desktop.windows()):
                for pid in desktop.execute(["pgrep", "-x", "soffice.bin"]).output.split():
                    desktop.execute(["kill", "-9", pid])
                    killed.append(pid)

    killer = threading.Thread(target=kill_the_office_once_the_batch_opened_its_dialog)
    killer.start()
    started = time.monotonic()
    try:
        text, info = step(
            env,
            "ax.act",
            steps=[
                {"op": "key", "keys": "ctrl+shift+s"},
                {"wait": "window", "name": "Save", "timeout_s": 20},
                {"wait": "query", "name": "never there", "timeout_s": 40},
                {"op": "key", "keys": "Escape"},
            ],
        )
    finally:
        stepped.set()
        killer.join()
    elapsed = time.monotonic() - started
    assert killed, "the Save window never showed: the office was not killed mid-batch"
    error = info["error"]
    assert error["code"] == "desktop_error" and "exited" in error["message"], error
    assert error["stopped_at"] in (1, 2) and error["input_events_emitted"] is False, error
    assert error["completed"] == error["stopped_at"]  # the steps before it ran, the Escape never did
    assert "(no input was emitted" in text, text
    assert elapsed < 40, "the batch waited out its wait instead of stopping when the office exited"
    _obs, info = env.reset(options={"task": "calc-sum-column"})
    assert "error" not in info
    assert "Calc" in observe(env, max_lines=5).splitlines()[0]


def test_ax_tools_are_not_offered_or_callable_without_the_option(make_env):
    env = make_env()
    _obs, info = env.reset(options={"task": "calc-sum-column"})
    assert not any(t["name"].startswith("ax.") for t in info["tools"])
    _text, info = step(env, "ax.observe")
    assert info["error"]["code"] == "unknown_tool"


def test_a_process_registered_under_libreoffices_name_cannot_take_over_its_refs(env):
    """A real AT-SPI application of the desktop user (mousepad started as ``soffice``) after Calc died."""
    env.reset(options={"task": "calc-sum-column"})
    view = observe(env)
    window, bold = REF.findall(view)[0], ref_of(view, "Bold")
    desktop = env.unwrapped._episode.desktop
    for pid in desktop.execute(["pgrep", "-x", "soffice.bin"]).output.split():
        desktop.execute(["kill", "-9", pid])
    desktop.launch(["bash", "-c", "exec -a soffice mousepad '/home/user/numbers.xlsx - LibreOffice Calc'"])
    _text, info = step(env, "ax.act", steps=[{"wait": "window", "name": "LibreOffice Calc", "timeout_s": 20}])
    assert "error" not in info, info["error"]
    impostor = observe(env)
    assert "Mousepad" in impostor.splitlines()[0] and window not in REF.findall(impostor)
    for ref in (bold, window):
        _text, info = step(env, "ax.act", steps=[{"op": "press", "ref": ref}])
        assert info["error"]["code"] == "stale_element_ref", info["error"]
        assert info["error"]["input_events_emitted"] is False


@pytest.mark.parametrize("task", ["calc-sum-column", "writer-replace-word"])
def test_the_ax_oracle_solves_the_task_through_ax_act_alone(env, task):
    from osworld_mcp_env.tasks.bundled import bundled_solution

    script = bundled_solution(task, "ax")
    assert {call["name"] for call in script} == {"ax.act", "computer_use"}
    assert script[-1]["arguments"]["action"] == "terminate"
    env.reset(options={"task": task})
    reward = 0.0
    for call in script:
        _obs, reward, _term, _trunc, info = env.step(call)
        assert "error" not in info, info["error"]
    assert reward == 1.0, info.get("evaluation")


def test_calc_cells_found_by_address_take_set_text_as_the_calc_tools_read_it(env):
    env.reset(options={"task": "calc-sum-column"})
    found, info = step(env, "ax.find", role="table cell", text="30")
    assert "error" not in info and "'A3' = '30'" in found, found
    far, _ = step(env, "ax.find", name="C500")  # beyond the visible range: read through the Table interface
    assert "table cell [e" in far and "'C500'" in far
    a3 = REF.findall(found)[0]
    text, info = step(env, "ax.act", steps=[{"op": "set_text", "ref": a3, "text": "31"}])
    assert "error" not in info, info["error"]
    assert f"0. set_text [{a3}] text='31': delivered, invoked, state_change confirmed" in text, text
    column, info = step(env, "libreoffice_calc.get_column_data", column_name="A")
    assert "error" not in info and "[12, 7, 31, 5, 46]" in column.replace(".0", ""), column
