"""Recorded computer_use steps as HybridCUA's pyautogui heredocs on the 0-999 grid, hand-computed."""

import pytest
from hybrid_agent.adapters.hybridcua import HybridCUAAdapter, render_reply
from hybrid_agent.rewrite import RewriteError, RewriteReason, grid_to_pixel, gui_parameters, pixel_to_grid
from hybrid_agent.rewrite.convert import heredoc
from hybrid_agent.trajectory import Call

SCREEN = (1920, 1080)


@pytest.mark.parametrize(
    ("pixel", "grid", "back"),
    [
        # 156 * 999 / 1920 = 81.17 -> 81 -> 81 * 1920 / 999 = 155.68 -> 156;
        # 231 -> 213.68 -> 214 -> 231.35 -> 231
        ((156, 231), (81, 214), (156, 231)),
        # The centre lies on a half: 499.5 -> 500 (half up) -> 960.96 / 540.54: no grid value lands on
        # 960 or 540
        ((960, 540), (500, 500), (961, 541)),
        ((0, 0), (0, 0), (0, 0)),
        # The far edge: 999 -> round(999 * 1920 / 999) = 1920, one past the last pixel, clamped onto 1919;
        # 1079 -> 998.08 -> 998 -> 1078.92 -> 1079
        ((1919, 1079), (999, 998), (1919, 1079)),
    ],
)
def test_pixels_go_to_the_grid_and_back_onto_the_nearest_pixel(pixel, grid, back):
    assert pixel_to_grid(pixel, SCREEN) == grid
    assert grid_to_pixel(grid, SCREEN) == back


@pytest.mark.parametrize(("width", "exact"), [(1920, 1000), (1280, 999), (800, 800)])
def test_every_pixel_of_a_row_lands_on_the_nearest_reachable_pixel(width, exact):
    """Grid values are coarser than a 1920 row (1.92 px apart): 1,000 pixels come back exactly, the rest
    one pixel off; on 1280 two values share the last pixel; an 800 row is finer than the grid: all exact."""
    screen = (width, 600)
    reachable = sorted({grid_to_pixel((v, 0), screen)[0] for v in range(1000)})
    landed = [grid_to_pixel(pixel_to_grid((p, 0), screen), screen)[0] for p in range(width)]
    for p, pixel in enumerate(landed):
        assert abs(pixel - p) == min(abs(r - p) for r in reachable)
    assert sum(pixel == p for p, pixel in enumerate(landed)) == exact


def converted(action: str, **arguments) -> dict[str, str]:
    return gui_parameters(Call("computer_use", {"action": action, **arguments}), SCREEN)


def code(action: str, **arguments) -> str:
    parameters = converted(action, **arguments)
    assert parameters["action"] == "bash"
    head, body = parameters["command"].split("import pyautogui\n")
    assert head == "python3 <<'PY'\n" and body.endswith("\nPY")
    return body.removesuffix("\nPY")


CLICK = "clicks={n}, interval=0.05, button={b!r})"


@pytest.mark.parametrize(
    ("action", "count", "button"),
    [("left_click", 1, "left"), ("double_click", 2, "left"), ("triple_click", 3, "left"),
     ("right_click", 1, "right"), ("middle_click", 1, "middle")],
)  # fmt: skip
def test_each_click_is_one_pyautogui_click_on_the_grid(action, count, button):
    assert code(action, coordinate=[156, 231], frame_id=7) == (
        f"pyautogui.click(x=81, y=214, {CLICK.format(n=count, b=button)}"
    )


def test_a_click_with_modifiers_holds_them_and_releases_them_even_on_failure():
    assert code("left_click", coordinate=[960, 540], keys=["ctrl", "shift"]) == (
        "pyautogui.keyDown('ctrl'); pyautogui.keyDown('shift')\ntry:\n"
        "    pyautogui.click(x=500, y=500, clicks=1, interval=0.05, button='left')\n"
        "finally:\n    pyautogui.keyUp('shift'); pyautogui.keyUp('ctrl')"
    )


def test_move_drag_and_scroll_on_the_grid():
    assert code("mouse_move", coordinate=[1919, 1079]) == "pyautogui.moveTo(x=999, y=998)"
    assert code("left_click_drag", start_coordinate=[0, 0], coordinate=[1919, 540]) == (
        "pyautogui.moveTo(x=0, y=0); pyautogui.dragTo(x=999, y=500, duration=0.5, button='left')"
    )
    assert code("left_click_drag", coordinate=[156, 231]) == (
        "pyautogui.dragTo(x=81, y=214, duration=0.5, button='left')"
    )
    # 50 pixels a notch, as the env's own input: -120 px -> 2 notches down; 50 px -> 1 notch right.
    assert code("scroll", pixels=-120, coordinate=[960, 540]) == "pyautogui.scroll(-2, x=500, y=500)"
    assert code("hscroll", pixels=50) == "pyautogui.hscroll(1)"


@pytest.mark.parametrize(
    ("keys", "names"),
    [(["ctrl", "Home"], ["ctrl", "home"]), (["Return"], ["enter"]), (["super"], ["win"]),
     (["Page_Down"], ["pagedown"]), (["ctrl", "alt", "t"], ["ctrl", "alt", "t"]), (["F5"], ["f5"])],
)  # fmt: skip
def test_keys_take_pyautogui_names(keys, names):
    assert code("key", keys=keys) == f"pyautogui.hotkey(*{names!r})"


def test_typing_is_written_as_the_text_with_its_newline():
    assert code("type", text="=SUM(A1:A5)\n") == "pyautogui.write('=SUM(A1:A5)\\n')"


def test_control_actions_stay_hybridcua_actions():
    assert converted("wait", time=0.5) == {"action": "wait", "time": "0.5"}
    assert converted("wait", time=2) == {"action": "wait", "time": "2"}
    assert converted("terminate", status="success") == {"action": "terminate", "status": "success"}
    assert converted("answer", text="42") == {"action": "answer", "text": "42"}


@pytest.mark.parametrize(
    "call",
    [Call("computer_use", {"action": "type", "text": "café"}),
     Call("computer_use", {"action": "key", "keys": ["Hyper_L"]}),
     Call("libreoffice_calc.set_cell_value", {"cell": "B1", "value": "1"})],
)  # fmt: skip
def test_what_pyautogui_cannot_do_is_unconvertible(call):
    with pytest.raises(RewriteError) as raised:
        gui_parameters(call, SCREEN)
    assert raised.value.reason is RewriteReason.UNCONVERTIBLE


def test_a_rendered_reply_parses_back_to_the_bash_call_on_the_grid():
    command = heredoc("pyautogui.write('a  b\\n')")
    text = render_reply("Type it.", [{"action": "bash", "command": command}, {"action": "wait", "time": "1"}])
    parsed = HybridCUAAdapter().parse_text(text, [])
    assert parsed.call.name == "bash"
    assert parsed.call.arguments == {"command": command, "pyautogui_grid": 999}
    assert parsed.action_line == "Type it."
    assert parsed.then[0].call.arguments == {"action": "wait", "time": 1.0}
    with pytest.raises(ValueError):
        render_reply("x", [{"action": "bash", "command": "echo '</parameter>'"}])
