"""Hostile actions for ``env.step`` and a seeded run that counts what comes back.

An RL policy emits every shape of output sooner or later; the env's promise is
that none of it raises and no step overruns its deadline. :class:`HostileActions`
draws actions from named classes (malformed JSON, wrong types, NaN and huge
numbers, deep nesting, lone surrogates, huge strings, unknown names, odd but
valid GUI actions, tool calls with odd arguments, bash commands) and says, for
each, which error code validation alone must give (``expected``; None when the
action is valid and reaches the desktop). :func:`run_fuzz` drives a real env with
them and returns a :class:`FuzzReport`: exceptions with their tracebacks, the
error-code histogram, steps over the deadline and latency percentiles.
``tools/fuzz_env.py`` is its command line; the desktop tests run a short one.
"""

from __future__ import annotations

import collections
import json
import random
import reprlib
import time
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from osworld_mcp_env.actions import COMPUTER_USE, COMPUTER_USE_ACTIONS, TERMINAL_ACTIONS, ActionLimits
from osworld_mcp_env.errors import ErrorCode

# Seconds a step may run past ``step_timeout_s`` (host bookkeeping) before it counts as an overrun.
DEADLINE_SLACK_S = 1.0

ODD_TEXT = (
    "", " ", "\n", "\t\t", "héllo wörld", "日本語テキスト", "שלום עולם", "emoji 🎉🚀", "\x00\x07\x1b[31m",
    "=1/0", "=SUM(A1:A1048576)", "'; DROP TABLE x; --", "%s%n%x", "../../../../etc/passwd",
    "$(reboot)", "`id`", "\u202eevil", "a\u0301\u0301\u0301", "\ufeff", "\U0010ffff",
)  # fmt: skip
ODD_KEYS = (
    ["ctrl", "alt", "t"], ["super"], ["alt", "F4"], ["F1"], ["Escape"], ["ctrl", "q"], ["ctrl", "z"],
    ["ctrl", "alt", "BackSpace"], ["NoSuchKey"], ["a"] * 8, ["é"], ["€"], ["Return"],
    ["ctrl", "shift", "Escape"], ["F99"], ["shift"], ["menu"], ["ctrl", "a"], ["Delete"], ["XF86PowerOff"],
)  # fmt: skip
HOSTILE_STRINGS = (
    "9**9**9**9", "((10**1000)**1000)**1000", "'-'*100000+'1'", "(" * 300 + ")" * 300, "1/0",
    "__import__('os').system('id')", "/dev/zero", "/proc/self/mem", "~/../../root", "*" * 5000,
)  # fmt: skip
BASH_COMMANDS = (
    "true", "echo $((1<<62))", "yes | head -c 3000000", "head -c 100000 /dev/urandom", "printf '\\xff\\xfe'",
    "ls -R / 2>/dev/null | head -n 2000", "sleep 30", "kill -9 -1", "cat /dev/zero | head -c 1000000",
    "ulimit -a", "env", "exit 7", "nproc; ps -e | wc -l", "cat /proc/self/status",
)  # fmt: skip


@dataclass(frozen=True)
class FuzzAction:
    """One hostile action.

    Attributes:
        kind: The fuzz class it was drawn from.
        action: What is passed to ``env.step``.
        expected: The code ``parse_action`` must return, or None when the action
            passes validation (and what happens next depends on the desktop).
    """

    kind: str
    action: Any
    expected: str | None

    def summary(self) -> str:
        """A short, bounded text form (``repr`` recurses into nesting 100,000 deep and fails)."""
        return f"{self.kind}: {_SHORT.repr(self.action)}"


def _gui(**arguments: Any) -> dict[str, Any]:
    return {"name": COMPUTER_USE, "arguments": arguments}


def _nested(depth: int, leaf: Any) -> Any:
    value = leaf
    for i in range(depth):
        value = [value] if i % 2 else {"k": value}
    return value


class HostileActions:
    """A seeded stream of :class:`FuzzAction` drawn from every fuzz class.

    Args:
        seed: Seeds the stream: the same seed, screen, tools and flags give the same actions.
        screen_size: (width, height) of the env's screen.
        tools: Tool schemas as in ``info["tools"]`` (``name``, ``parameters``), for
            calls with odd arguments; without them only made-up tool names are used.
        enable_bash: Draw ``bash`` calls too.
        limits: The env's action limits (sizes just past them are drawn).
    """

    def __init__(
        self,
        seed: int,
        *,
        screen_size: tuple[int, int],
        tools: Sequence[Mapping[str, Any]] = (),
        enable_bash: bool = False,
        limits: ActionLimits | None = None,
    ) -> None:
        self._rng = random.Random(seed)
        self._width, self._height = screen_size
        self._tools = sorted(tools, key=lambda t: str(t["name"]))
        self._limits = limits or ActionLimits()
        self.classes: dict[str, tuple[float, Callable[[], FuzzAction]]] = {
            "malformed_json": (1.0, self._malformed_json),
            "not_an_object": (0.5, self._not_an_object),
            "wrong_types": (1.5, self._wrong_types),
            "non_finite": (1.0, self._non_finite),
            "huge_numbers": (1.0, self._huge_numbers),
            "deep_nesting": (0.5, self._deep_nesting),
            "lone_surrogates": (0.5, self._lone_surrogates),
            "huge_strings": (0.5, self._huge_strings),
            "mixed_keys": (0.5, self._mixed_keys),
            "unknown_names": (1.0, self._unknown_names),
            "odd_gui": (2.0, self._odd_gui),
            "odd_tool_args": (1.5 if self._tools else 0.0, self._odd_tool_args),
            "bash": (1.0 if enable_bash else 0.0, self._bash),
        }
        self._names = [name for name, (weight, _) in self.classes.items() if weight > 0]
        self._weights = [self.classes[name][0] for name in self._names]

    def __iter__(self) -> Iterator[FuzzAction]:
        while True:
            yield self.draw()

    def draw(self, kind: str | None = None) -> FuzzAction:
        """The next action, of ``kind`` or of a class drawn by weight."""
        kind = kind or self._rng.choices(self._names, self._weights)[0]
        return self.classes[kind][1]()

    # --- helpers -------------------------------------------------------------
    def _point(self) -> list[int]:
        r = self._rng
        return [r.choice([0, self._width - 1, r.randrange(self._width)]), r.randrange(self._height)]

    def _made(self, kind: str, action: Any, expected: str | None) -> FuzzAction:
        return FuzzAction(kind, action, None if expected is None else str(expected))

    # --- classes -------------------------------------------------------------
    def _malformed_json(self) -> FuzzAction:
        valid = json.dumps(_gui(action="left_click", coordinate=self._point()))
        text = self._rng.choice(
            [
                valid[: self._rng.randrange(1, len(valid))],
                valid + "}",
                valid.replace('"', "'"),
                "{name: computer_use}",
                "",
                "   ",
                "{" * 5 + "}" * 4,
                '{"name": "computer_use", "arguments": {"action": "left_click",}}',
                "\x00" + valid,
                valid + "\n" + valid,
            ]
        )
        return self._made("malformed_json", text, ErrorCode.INVALID_JSON)

    def _not_an_object(self) -> FuzzAction:
        value = self._rng.choice(["[]", "null", "42", '"computer_use"', "true", 7, None, [1, 2], b"{}", 3.5])
        return self._made("not_an_object", value, ErrorCode.INVALID_JSON)

    def _wrong_types(self) -> FuzzAction:
        r = self._rng
        junk = r.choice([None, 5, 2.5, True, [], {}, ["left_click"], {"action": "left_click"}, ""])
        invalid = ErrorCode.INVALID_ARGUMENTS
        cases = [
            ({"name": junk, "arguments": {}}, ErrorCode.INVALID_ACTION),
            ({"name": COMPUTER_USE, "arguments": r.choice([None, [], "left_click", 3])}, invalid),
            (_gui(action=r.choice([None, 5, ["left_click"], {"a": 1}, True, ""])), ErrorCode.UNKNOWN_ACTION),
            (_gui(action="left_click", coordinate=r.choice(["1,1", {"x": 1}, [1], [1, 2, 3]])), invalid),
            (_gui(action="left_click", coordinate=[r.choice(["1", None, [], True]), 5]), invalid),
            (_gui(action="type", text=r.choice([5, None, ["a"], {"t": "a"}])), invalid),
            (_gui(action="key", keys=r.choice([[], [1], [""], None, 5, [["ctrl"]]])), invalid),
            (_gui(action="scroll", pixels=r.choice(["10", 1.5, None, [10]])), invalid),
            (_gui(action="wait", time=r.choice(["1", None, -1, [1]])), invalid),
            (_gui(action="terminate", status=r.choice(["done", 1, None, ["success"]])), invalid),
            (_gui(action="mouse_move", coordinate=[1, 1], frame_id=r.choice(["1", 1.5, True])), invalid),
        ]  # fmt: skip
        action, code = r.choice(cases)
        return self._made("wrong_types", action, code)

    def _non_finite(self) -> FuzzAction:
        r = self._rng
        token = r.choice(["NaN", "Infinity", "-Infinity", "1e400", "-1e400"])
        template = r.choice(
            [
                '{"name": "computer_use", "arguments": {"action": "left_click", "coordinate": [%s, 5]}}',
                '{"name": "computer_use", "arguments": {"action": "scroll", "pixels": %s}}',
                '{"name": "computer_use", "arguments": {"action": "wait", "time": %s}}',
                '{"name": "os.calculator", "arguments": {"expression": "1", "x": %s}}',
            ]
        )
        if r.random() < 0.3:  # a mapping from a Python caller
            number = float(token.replace("1e400", "inf"))
            action = _gui(action="left_click", coordinate=[number, 5])
            return self._made("non_finite", action, ErrorCode.INVALID_JSON)
        return self._made("non_finite", template % token, ErrorCode.INVALID_JSON)

    def _huge_numbers(self) -> FuzzAction:
        r = self._rng
        big = 10 ** r.randrange(20, 300)
        cases = [
            (_gui(action="left_click", coordinate=[big, 5]), ErrorCode.OUT_OF_SCREEN),
            (_gui(action="left_click", coordinate=[-big, -big]), ErrorCode.OUT_OF_SCREEN),
            (_gui(action="scroll", pixels=r.choice([big, -big, 1e300])), ErrorCode.INVALID_ARGUMENTS),
            (_gui(action="wait", time=r.choice([big, 1e300])), ErrorCode.INVALID_ARGUMENTS),
            ('{"name": "computer_use", "arguments": {"action": "scroll", "pixels": 1%s}}' % ("0" * 5000),
             ErrorCode.INVALID_JSON),
            (_gui(action="mouse_move", coordinate=self._point(), frame_id=big), None),
        ]  # fmt: skip
        action, code = r.choice(cases)
        return self._made("huge_numbers", action, code)

    def _deep_nesting(self) -> FuzzAction:
        r = self._rng
        depth = r.choice([self._limits.max_depth + 1, 200, 1_000, 100_000])
        if r.random() < 0.5:
            text = '{"name": "os.calculator", "arguments": {"expression": ' + "[" * depth + "]" * depth + "}}"
            too_large = len(text) > self._limits.max_payload_chars
            return self._made(
                "deep_nesting", text, ErrorCode.PAYLOAD_TOO_LARGE if too_large else ErrorCode.INVALID_JSON
            )
        action = {"name": "computer_use", "arguments": {"action": "type", "text": _nested(depth, "x")}}
        return self._made("deep_nesting", action, ErrorCode.INVALID_JSON)

    def _lone_surrogates(self) -> FuzzAction:
        r = self._rng
        bad = r.choice(["\ud800", "\udfff", "a\udc80b", "\ud83d"])
        cases = [
            _gui(action="type", text=bad),
            {"name": "os.calculator", "arguments": {"expression": bad}},
            {"name": bad, "arguments": {}},
            {"name": "os.calculator", "arguments": {bad: "1"}},
            '{"name": "computer_use", "arguments": {"action": "type", "text": "\\ud800"}}',
        ]
        return self._made("lone_surrogates", r.choice(cases), ErrorCode.INVALID_JSON)

    def _huge_strings(self) -> FuzzAction:
        limits = self._limits
        cases = [
            (_gui(action="type", text="x" * (limits.max_type_chars + self._rng.randrange(1, 5000))),
             ErrorCode.PAYLOAD_TOO_LARGE),
            ("x" * (limits.max_payload_chars + 1), ErrorCode.PAYLOAD_TOO_LARGE),
            ({"name": "os.calculator", "arguments": {"expression": "1" * (limits.max_payload_chars + 10)}},
             ErrorCode.PAYLOAD_TOO_LARGE),
            (_gui(action="x" * 50_000), ErrorCode.UNKNOWN_ACTION),
        ]  # fmt: skip
        action, code = self._rng.choice(cases)
        return self._made("huge_strings", action, code)

    def _mixed_keys(self) -> FuzzAction:
        r = self._rng
        cases = [
            ({"name": COMPUTER_USE, "arguments": {"action": "mouse_move", "coordinate": [1, 1], 7: "x"}},
             ErrorCode.INVALID_ARGUMENTS),
            ({"name": COMPUTER_USE, "arguments": {"action": "mouse_move", "coordinate": [1, 1], ("a", 1): 2}},
             ErrorCode.INVALID_JSON),
            ({1: "x", "name": COMPUTER_USE, "arguments": {"action": "mouse_move", "coordinate": [3, 3]}},
             None),
            ({"name": "os.calculator", "arguments": {1.5: "x", None: "y", "expression": "1"}}, None),
            ({"name": COMPUTER_USE, "arguments": {"action": "wait", "time": 0, frozenset(): 1}},
             ErrorCode.INVALID_JSON),
        ]  # fmt: skip
        action, code = r.choice(cases)
        return self._made("mixed_keys", action, code)

    def _unknown_names(self) -> FuzzAction:
        r = self._rng
        if r.random() < 0.5:
            action = r.choice(
                ["fly", "LEFT_CLICK", "left-click", "click", "screenshot", "drag", "pinch", " "]
            )
            return self._made("unknown_names", _gui(action=action), ErrorCode.UNKNOWN_ACTION)
        name = r.choice(
            ["no_such_tool", "os.no_such_tool", "libreoffice_calc.", ".", "os..calculator", "OS.calculator",
             "computer-use", "bash", "x" * 300, "libreoffice_calc.set_cell_value.extra", "__proto__"]
        )  # fmt: skip
        return self._made("unknown_names", {"name": name, "arguments": {}}, None)

    def _odd_gui(self) -> FuzzAction:
        r = self._rng
        action = r.choice([a for a in COMPUTER_USE_ACTIONS if a not in TERMINAL_ACTIONS] + ["end"])
        if action == "end":  # rare: ends the episode
            if r.random() < 0.8:
                return self._odd_gui()
            choice = r.choice([_gui(action="terminate", status="success"), _gui(action="answer", text="42")])
            return self._made("odd_gui", choice, None)
        if action == "key":
            return self._made("odd_gui", _gui(action="key", keys=r.choice(ODD_KEYS)), None)
        if action == "type":
            text = r.choice(ODD_TEXT) * r.choice([1, 1, 1, 3, 20])
            if r.random() < 0.01:  # one that cannot finish inside the deadline
                text = "long text, " * (self._limits.max_type_chars // 11)
            return self._made("odd_gui", _gui(action="type", text=text[: self._limits.max_type_chars]), None)
        if action in ("scroll", "hscroll"):
            pixels = r.choice([0, 1, -1, 49, self._limits.max_scroll_pixels, -self._limits.max_scroll_pixels])
            args: dict[str, Any] = {"pixels": pixels}
            if r.random() < 0.7:
                args["coordinate"] = self._point()
            return self._made("odd_gui", _gui(action=action, **args), None)
        if action == "wait":
            seconds = r.choice([0, 0, 0.01, 0.5, 1]) if r.random() > 0.005 else self._limits.max_wait_seconds
            return self._made("odd_gui", _gui(action="wait", time=seconds), None)
        if action == "left_click_drag":
            args = {"coordinate": self._point()}
            if r.random() < 0.7:
                args["start_coordinate"] = self._point()
            return self._made("odd_gui", _gui(action=action, **args), None)
        args = {"coordinate": [r.uniform(0, self._width - 1), r.uniform(0, self._height - 1)]}
        if action == "left_click" and r.random() < 0.3:
            args["keys"] = r.choice(ODD_KEYS)[:3]
        return self._made("odd_gui", _gui(action=action, **args), None)

    def _odd_tool_args(self) -> FuzzAction:
        r = self._rng
        tool = r.choice(self._tools)
        properties = dict((tool.get("parameters") or {}).get("properties") or {})
        args: dict[str, Any] = {}
        for name, schema in properties.items():
            if r.random() < 0.2:
                continue  # a missing (maybe required) argument
            args[name] = self._odd_value(schema if isinstance(schema, dict) else {})
        if r.random() < 0.2:
            args["unexpected_" + str(r.randrange(100))] = r.choice(ODD_TEXT)
        action = {"name": tool["name"], "arguments": args}
        too_large = len(json.dumps(action)) > self._limits.max_payload_chars
        return self._made("odd_tool_args", action, ErrorCode.PAYLOAD_TOO_LARGE if too_large else None)

    def _odd_value(self, schema: Mapping[str, Any]) -> Any:
        r = self._rng
        typed = schema.get("type")
        if r.random() < 0.3:  # the wrong type
            return r.choice([None, True, -1, 2**70, 0.5, [], {}, ["x"], {"a": [1]}, "text"])
        if typed == "string":
            return r.choice([*ODD_TEXT, *HOSTILE_STRINGS, "x" * r.choice([1, 1000, 20_000])])
        if typed in ("integer", "number"):
            return r.choice([0, -1, 1, 2**31, -(2**63), 10**30, 0.1, 1e308, -1e-308])
        if typed == "boolean":
            return r.choice([True, False])
        if typed == "array":
            return r.choice([[], [None], [[1, 2], [3]], list(range(1000)), [ODD_TEXT[5]] * 50])
        return r.choice([*ODD_TEXT, 0, None, {}])

    def _bash(self) -> FuzzAction:
        r = self._rng
        if r.random() < 0.2:  # arguments the env must refuse
            arguments: dict[str, Any] = r.choice(
                [{}, {"command": ""}, {"command": 5}, {"command": "true", "timeout": 0},
                 {"command": "true", "timeout": 10**9}, {"command": "true", "timeout": "1"},
                 {"command": ["ls"]}, {"command": "true", "timeout": True}]
            )  # fmt: skip
            return self._made("bash", {"name": "bash", "arguments": arguments}, None)
        arguments = {"command": r.choice(BASH_COMMANDS)}
        if r.random() < 0.5:
            arguments["timeout"] = r.choice([1, 2, 5, 0.5])
        return self._made("bash", {"name": "bash", "arguments": arguments}, None)


@dataclass
class FuzzReport:
    """What a fuzz run saw.

    Attributes:
        actions: Steps taken.
        resets: Resets done (every ``reset_every`` steps and after an episode ended).
        exceptions: ``(where, kind, traceback)`` of every exception out of ``step`` or ``reset``.
        codes: ``info["error"]["code"]`` per step (``ok`` without an error).
        codes_by_kind: The same, per fuzz class.
        expected_mismatches: Steps whose code differs from the action's ``expected`` one.
        over_deadline: Steps that took longer than ``step_timeout_s`` + :data:`DEADLINE_SLACK_S`.
        step_timeout_s: The env's step deadline.
        latencies_s: Wall time of every step.
        reset_latencies_s: Wall time of every reset.
        observation_errors: ``info["observation_error"]["code"]`` counts.
    """

    step_timeout_s: float
    actions: int = 0
    resets: int = 0
    exceptions: list[tuple[str, str, str]] = field(default_factory=list)
    codes: collections.Counter[str] = field(default_factory=collections.Counter)
    codes_by_kind: dict[str, collections.Counter[str]] = field(
        default_factory=lambda: collections.defaultdict(collections.Counter)
    )
    expected_mismatches: list[tuple[str, str | None, str, str]] = field(default_factory=list)
    over_deadline: list[tuple[str, float]] = field(default_factory=list)
    latencies_s: list[float] = field(default_factory=list)
    reset_latencies_s: list[float] = field(default_factory=list)
    observation_errors: collections.Counter[str] = field(default_factory=collections.Counter)

    def distinct_tracebacks(self) -> dict[str, int]:
        """Each distinct traceback (its last lines) and how often it occurred."""
        counts: collections.Counter[str] = collections.Counter()
        for where, _kind, trace in self.exceptions:
            counts[f"[{where}] " + "\n".join(trace.strip().splitlines()[-6:])] += 1
        return dict(counts)

    def percentile_ms(self, q: float, samples: Sequence[float] | None = None) -> float:
        """The ``q``-th percentile (nearest rank) of step latencies in milliseconds."""
        ordered = sorted(self.latencies_s if samples is None else samples)
        if not ordered:
            return 0.0
        rank = min(len(ordered) - 1, max(0, round(q / 100 * len(ordered) + 0.5) - 1))
        return ordered[rank] * 1000

    def table(self) -> str:
        """The report as Markdown."""
        lines = [
            "| measure | value |",
            "|---|---:|",
            f"| actions | {self.actions} |",
            f"| resets | {self.resets} |",
            f"| exceptions (step + reset) | {len(self.exceptions)} |",
            f"| steps over the deadline ({self.step_timeout_s:g} s + {DEADLINE_SLACK_S:g} s) "
            f"| {len(self.over_deadline)} |",
            f"| codes differing from validation's expected code | {len(self.expected_mismatches)} |",
            *(
                f"| step latency {name} | {self.percentile_ms(q):.0f} ms |"
                for name, q in (("p50", 50), ("p95", 95), ("p99", 99), ("max", 100))
            ),
            f"| reset latency p50 / max | {self.percentile_ms(50, self.reset_latencies_s):.0f} / "
            f"{self.percentile_ms(100, self.reset_latencies_s):.0f} ms |",
            "",
            "| error code | steps |",
            "|---|---:|",
            *(f"| {code} | {n} |" for code, n in self.codes.most_common()),
        ]
        if self.observation_errors:
            lines += ["", "| observation error | steps |", "|---|---:|"]
            lines += [f"| {code} | {n} |" for code, n in self.observation_errors.most_common()]
        lines += ["", "| fuzz class | codes |", "|---|---|"]
        for kind in sorted(self.codes_by_kind):
            codes = ", ".join(f"{c} {n}" for c, n in self.codes_by_kind[kind].most_common())
            lines.append(f"| {kind} | {codes} |")
        for trace, n in self.distinct_tracebacks().items():
            lines += ["", f"exception x{n}:", "```", trace, "```"]
        for where, seconds in self.over_deadline[:20]:
            lines.append(f"over the deadline: {where} took {seconds:.1f} s")
        for kind, expected, got, action in self.expected_mismatches[:20]:
            lines.append(f"code mismatch ({kind}): expected {expected}, got {got}: {action}")
        return "\n".join(lines)


def run_fuzz(
    env: gym.Env,
    *,
    actions: int,
    seed: int,
    reset_every: int = 100,
    enable_bash: bool = False,
    on_step: Callable[[int, FuzzReport], None] | None = None,
) -> FuzzReport:
    """Steps ``env`` with ``actions`` hostile actions, resetting every ``reset_every`` steps.

    Exceptions are recorded, not raised: the run goes on with a reset. The tool
    schemas for odd tool arguments are those the first reset shows.

    Args:
        env: An env made with ``gym.make`` (its task set).
        actions: Number of steps.
        seed: Seeds the action stream.
        reset_every: Steps between resets (an ended episode resets at once).
        enable_bash: Draw ``bash`` calls (the env must have ``enable_bash=True``).
        on_step: Called after every step with its index and the report so far (progress).
    """
    # Here, not at the top: the action stream above is usable without the env and its evaluators.
    from osworld_mcp_env.env.core import OSWorldMCPEnv

    unwrapped = env.unwrapped
    if not isinstance(unwrapped, OSWorldMCPEnv):
        raise TypeError(f"run_fuzz drives an OSWorldMCPEnv, got {type(unwrapped).__name__}.")
    config = unwrapped.config
    report = FuzzReport(step_timeout_s=config.step_timeout_s)
    info = _reset(env, report)
    stream = HostileActions(
        seed,
        screen_size=(config.screen_width, config.screen_height),
        tools=info.get("tools", []) if info else [],
        enable_bash=enable_bash,
        limits=config.limits,
    )
    since_reset = 0
    for index in range(actions):
        fuzz = stream.draw()
        started = time.monotonic()
        try:
            _obs, _reward, terminated, truncated, info = env.step(fuzz.action)
        except Exception:
            report.exceptions.append((f"step {index} ({fuzz.kind})", fuzz.kind, traceback.format_exc()))
            terminated, truncated, info = True, False, {}
        elapsed = time.monotonic() - started
        report.actions += 1
        report.latencies_s.append(elapsed)
        if elapsed > config.step_timeout_s + DEADLINE_SLACK_S:
            report.over_deadline.append((f"step {index} {fuzz.summary()}", elapsed))
        code = str((info.get("error") or {}).get("code", "ok"))
        report.codes[code] += 1
        report.codes_by_kind[fuzz.kind][code] += 1
        if fuzz.expected is not None and code != fuzz.expected:
            report.expected_mismatches.append((fuzz.kind, fuzz.expected, code, fuzz.summary()))
        if "observation_error" in info:
            report.observation_errors[str(info["observation_error"].get("code"))] += 1
        since_reset += 1
        if on_step is not None:
            on_step(index, report)
        if terminated or truncated or since_reset >= reset_every:
            _reset(env, report)
            since_reset = 0
    return report


def _reset(env: gym.Env, report: FuzzReport) -> dict[str, Any] | None:
    started = time.monotonic()
    try:
        _obs, info = env.reset()
    except Exception:
        report.exceptions.append((f"reset {report.resets}", "reset", traceback.format_exc()))
        info = None
    report.resets += 1
    report.reset_latencies_s.append(time.monotonic() - started)
    return info


_SHORT = reprlib.Repr()
_SHORT.maxlevel, _SHORT.maxstring, _SHORT.maxother, _SHORT.maxlong = 4, 100, 100, 40
