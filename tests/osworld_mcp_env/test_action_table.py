"""The computer_use action table drives every reader: validator, prompt, parser, guest executor.

Each test derives its cases from ``GUI_ACTIONS`` (Qwen3-VL's ``COMPUTER_USE_ACTIONS`` and
the zoom) and fails when one reader disagrees with it (an action added to the table and
not to the guest, a prompt enum built by hand, a parser with its own list of ending
actions). The guest's ``/gui`` route is checked on a real desktop in ``test_guest_input.py``.
"""

from __future__ import annotations

import json
from typing import Any, get_args

import pytest
from hybrid_agent.parse import ParsedAction, ParseError, ParseErrorCode, parse_response
from hybrid_agent.prompt import computer_use_function
from osworld_mcp_env.actions import (
    COMPUTER_USE_ACTIONS,
    GUI_ACTIONS,
    INPUT_ACTIONS,
    TERMINAL_ACTIONS,
    ZOOM,
    ActionSpec,
    ArgKind,
    Click,
    Executor,
    GuiAction,
    parse_action,
)
from osworld_mcp_env.errors import ActionError
from osworld_mcp_env.guest import xinput

SCREEN = (1920, 1080)
# A valid value of each argument kind.
SAMPLE: dict[str, Any] = {
    "coordinate": [10, 20],
    "int": 50,
    "number": 0.5,
    "text": "a",
    "keys": ["shift"],
    "status": "success",
    "region": [10, 20, 30, 40],
    "scale": 2,
}
ACTIONS = sorted(GUI_ACTIONS)


def arguments(spec: ActionSpec, *, optional: bool = False) -> dict[str, Any]:
    """Valid arguments for ``spec``: the required ones, and the optional ones too if asked."""
    declared = {**spec.required, **(spec.optional if optional else {})}
    return {arg: SAMPLE[kind] for arg, kind in declared.items()}


def tool_call(action: str, args: dict[str, Any]) -> str:
    return "<tool_call>" + json.dumps({"name": "computer_use", "arguments": {"action": action, **args}})


def test_every_argument_kind_has_a_sample_and_each_argument_name_one_kind():
    assert set(SAMPLE) == set(get_args(ArgKind))
    kinds: dict[str, set[str]] = {}
    for spec in GUI_ACTIONS.values():
        for arg, kind in [*spec.required.items(), *spec.optional.items()]:
            kinds.setdefault(arg, set()).add(kind)
    # The prompt shows one schema per argument name: two kinds under one name would lie to the model.
    assert {arg: k for arg, k in kinds.items() if len(k) > 1} == {}


def test_executor_kinds_partition_the_table_and_end_the_episode_only_for_end():
    by_kind = {kind: {n for n, s in GUI_ACTIONS.items() if s.executor is kind} for kind in Executor}
    assert by_kind == {
        Executor.INPUT: set(INPUT_ACTIONS),
        Executor.ENV: {"wait", "zoom"},
        Executor.END: set(TERMINAL_ACTIONS),
    }
    assert sorted(TERMINAL_ACTIONS) == ["answer", "terminate"]
    # The study's vocabulary is the table less the zoom, in the same order.
    assert [*COMPUTER_USE_ACTIONS, ZOOM] == list(GUI_ACTIONS)
    for spec in GUI_ACTIONS.values():
        assert spec.ends_episode == (spec.executor is Executor.END)
        assert spec.click is None or spec.executor is Executor.INPUT
    with pytest.raises(ValueError, match="input executor"):
        ActionSpec("Click and end.", executor=Executor.END, click=Click("left"))


@pytest.mark.parametrize("action", ACTIONS)
def test_validator_takes_exactly_the_declared_arguments(action):
    spec = GUI_ACTIONS[action]
    for args in (arguments(spec), arguments(spec, optional=True)):
        parsed = parse_action({"name": "computer_use", "arguments": {"action": action, **args}}, SCREEN)
        assert isinstance(parsed, GuiAction), parsed
        resolved = {"scale"} if action == ZOOM else set()  # the zoom's factor is always resolved
        assert (parsed.action, set(parsed.arguments), parsed.ends_episode) == (
            action,
            set(args) | resolved,
            spec.ends_episode,
        )
    for missing in spec.required:
        args = {k: v for k, v in arguments(spec).items() if k != missing}
        refused = parse_action({"name": "computer_use", "arguments": {"action": action, **args}}, SCREEN)
        assert isinstance(refused, ActionError) and refused.code == "invalid_arguments"
    undeclared = next(
        arg for arg in ("text", "pixels", "status") if arg not in {**spec.required, **spec.optional}
    )
    extra = {**arguments(spec), undeclared: "x"}
    refused = parse_action({"name": "computer_use", "arguments": {"action": action, **extra}}, SCREEN)
    assert isinstance(refused, ActionError) and refused.code == "invalid_arguments"


@pytest.mark.parametrize("table", [COMPUTER_USE_ACTIONS, GUI_ACTIONS], ids=["study", "with_zoom"])
def test_prompt_schema_shows_the_table(table):
    function = computer_use_function((1000, 1000), table)["function"]
    properties = function["parameters"]["properties"]
    assert properties["action"]["enum"] == list(table)
    declared = {arg for s in table.values() for arg in [*s.required, *s.optional]}
    assert set(properties) == {"action"} | declared
    for action, spec in table.items():
        assert f"* `{action}`: {spec.description}" in properties["action"]["description"]
        for arg in spec.required:
            assert f"`{action}`" in properties[arg]["description"].split("Required by", 1)[1]
    # Each argument's JSON schema accepts the table's sample value of its kind.
    types = {"array": list, "integer": int, "number": (int, float), "string": str}
    for spec in table.values():
        for arg, kind in [*spec.required.items(), *spec.optional.items()]:
            schema = properties[arg]
            assert isinstance(SAMPLE[kind], types[schema["type"]])
            assert SAMPLE[kind] in schema.get("enum", [SAMPLE[kind]])


@pytest.mark.parametrize("action", ACTIONS)
def test_parser_accepts_each_action_and_ends_the_episode_as_the_table_says(action):
    spec = GUI_ACTIONS[action]
    parsed = parse_response(tool_call(action, arguments(spec)), actions=GUI_ACTIONS)
    assert isinstance(parsed, ParsedAction), parsed
    # The study's parser knows Qwen3-VL's vocabulary only: the zoom is refused there.
    study = parse_response(tool_call(action, arguments(spec)))
    assert isinstance(study, ParsedAction) == (action in COMPUTER_USE_ACTIONS)
    assert parsed.is_terminal == spec.ends_episode
    # A table name used as a function name is a GUI action, never an MCP call.
    misplaced = parse_response(
        "<tool_call>" + json.dumps({"name": action, "arguments": {}}), actions=GUI_ACTIONS
    )
    assert isinstance(misplaced, ParseError) and misplaced.code == ParseErrorCode.GUI_ACTION_AS_TOOL


def test_parser_refuses_a_name_outside_the_table():
    refused = parse_response(tool_call("quadruple_click", {"coordinate": [1, 1]}))
    assert isinstance(refused, ParseError) and refused.code == ParseErrorCode.UNKNOWN_GUI_ACTION


def test_guest_input_device_has_one_handler_per_input_action():
    assert set(xinput.HANDLERS) == INPUT_ACTIONS
    clicks = {name: spec.click for name, spec in COMPUTER_USE_ACTIONS.items() if spec.click}
    assert clicks == {
        "left_click": Click("left", 1),
        "right_click": Click("right", 1),
        "middle_click": Click("middle", 1),
        "double_click": Click("left", 2),
        "triple_click": Click("left", 3),
    }
    assert {c.button for c in clicks.values()} <= set(xinput.BUTTONS)


def test_guest_input_device_refuses_a_table_it_does_not_cover():
    table = dict(COMPUTER_USE_ACTIONS)
    table["quadruple_click"] = ActionSpec("Four clicks.", {"coordinate": "coordinate"})
    with pytest.raises(ValueError, match=r"without a handler \['quadruple_click'\]"):
        xinput.build_handlers(table)
    del table["quadruple_click"]
    table["key"] = ActionSpec("Keys, now performed by the env.", {"keys": "keys"}, executor=Executor.ENV)
    with pytest.raises(ValueError, match=r"handlers of no input action \['key'\]"):
        xinput.build_handlers(table)
    table = dict(COMPUTER_USE_ACTIONS)
    table["key"] = ActionSpec("Keys as a click.", {"keys": "keys"}, click=Click("left"))
    with pytest.raises(ValueError, match="no named handler"):
        xinput.build_handlers(table)
    # A new click needs no new handler: the table's Click drives the one click handler.
    table = dict(COMPUTER_USE_ACTIONS)
    table["quadruple_click"] = ActionSpec(
        "Four clicks.", {"coordinate": "coordinate"}, click=Click("left", 4)
    )
    assert set(xinput.build_handlers(table)) == INPUT_ACTIONS | {"quadruple_click"}
