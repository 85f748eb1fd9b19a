"""Arguments cannot wedge the tool host: bounded arithmetic, bounded results, one door for spawning.

The transports are attacked in test_mcp_wire.py and the client in test_mcp_client.py;
here are the pieces they rely on, tested directly.
"""

from __future__ import annotations

import ast
import json
import math
import time
from pathlib import Path
from typing import Any

import osworld_mcp_env.mcp_servers as mcp_servers
import pytest
from mcp.server.mcpserver.exceptions import ToolError
from osworld_mcp_env.mcp_host.limits import ToolLimits
from osworld_mcp_env.mcp_servers.bounds import encoded_size, fit_json
from osworld_mcp_env.mcp_servers.tools.arith import evaluate

LIMITS = ToolLimits()

BOMBS = [
    "((10**1000)**1000)**1000",
    "9**9**9**9",
    "2**(2**64)",
    "(10**999)*(10**999)",
    "-" * 100_000 + "1",
    "-(" * 150 + "1" + ")" * 150,
    "-" * 999 + "1",
    "10**999 / 10**-999",
    "1e308 * 10",
    "(-8) ** 0.5",
    "(10**999) ** -2",
    "1 / 0",
    "2 ** -1 ** 0 // 0",
]


@pytest.mark.parametrize("bomb", BOMBS, ids=[b[:24] for b in BOMBS])
def test_a_costly_or_invalid_expression_is_refused_within_milliseconds_of_cpu(bomb: str) -> None:
    """CPU time, not wall time: the bound holds however busy the machine is."""
    started = time.thread_time()
    with pytest.raises(ToolError) as info:
        evaluate(bomb, LIMITS)
    assert time.thread_time() - started < 0.1, (
        f"{bomb[:40]!r} took {time.thread_time() - started:.3f} s of CPU"
    )
    assert "MemoryError" not in str(info.value) and str(info.value)


def test_the_worst_expression_within_the_limits_is_cheap() -> None:
    """A thousand characters of the largest allowed products and powers."""
    big = "(" + "*".join(["(9**500)"] * 2) + ")"
    worst = "+".join([big] * (LIMITS.calculator_max_chars // (len(big) + 1)))
    assert len(worst) <= LIMITS.calculator_max_chars
    started = time.thread_time()
    assert evaluate(worst, LIMITS) > 0
    assert time.thread_time() - started < 0.1


@pytest.mark.parametrize(
    ("expression", "value"),
    [
        ("2*3+4", 10),
        ("7/2", 3.5),
        ("7//2", 3),
        ("-7%3", 2),
        ("2**10", 1024),
        ("10**999", 10**999),
        ("1.5e3-1", 1499.0),
    ],
)
def test_ordinary_arithmetic_still_works(expression: str, value: float) -> None:
    assert evaluate(expression, LIMITS) == value


def test_names_calls_and_other_syntax_are_refused() -> None:
    for expression in (
        "__import__('os')",
        "x + 1",
        "[1] * 10",
        "True + 1",
        "1j",
        "1 if 1 else 2",
        "1 << 9999",
    ):
        with pytest.raises(ToolError, match=r"allowed|Not an arithmetic"):
            evaluate(expression, LIMITS)


def test_the_limits_are_the_configured_ones() -> None:
    small = ToolLimits(calculator_max_chars=10, calculator_max_digits=5, calculator_max_depth=3)
    with pytest.raises(ToolError, match="10"):
        evaluate("1+1+1+1+1+1", small)
    with pytest.raises(ToolError, match="5 digits"):
        evaluate("10**6", small)
    with pytest.raises(ToolError, match="3 levels"):
        evaluate("-(-(-1))", small)
    assert evaluate("99999", small) == 99999


def test_limits_reject_nonsense_with_the_field_named() -> None:
    with pytest.raises(ValueError, match="max_walk_entries"):
        ToolLimits(max_walk_entries=0)
    with pytest.raises(ValueError, match="max_argument_bytes"):
        ToolLimits(max_argument_bytes=2 << 20)


# ----------------------------------------------------------------------------- bounded results


def _result(text: str, data: Any) -> dict[str, Any]:
    return {
        "content": [{"type": "text", "text": text}],
        "structuredContent": {
            "message": text,
            "effect": {"kind": "read_only", "changed": False},
            "data": data,
        },
        "isError": False,
    }


@pytest.mark.parametrize(
    "data",
    [
        "x" * 5_000_000,
        ["row"] * 1_000_000,
        {f"k{i}": "v" * 100 for i in range(100_000)},
        [[i] * 50 for i in range(20_000)],
        "é" * 400_000,
    ],
    ids=["long_string", "long_list", "wide_object", "table", "multibyte"],
)
def test_fit_json_cuts_any_result_to_the_budget_and_marks_the_cut(data: Any) -> None:
    value, cut = fit_json(_result("m" * 300_000, data), LIMITS.max_result_bytes)
    assert cut and encoded_size(value) <= LIMITS.max_result_bytes
    assert "[truncated" in json.dumps(value)
    assert value["structuredContent"]["effect"] == {"kind": "read_only", "changed": False}
    assert value["isError"] is False and value["content"][0]["type"] == "text"


def test_fit_json_leaves_a_small_result_alone() -> None:
    small = _result("3 files.", ["a", "b", "c"])
    assert fit_json(small, LIMITS.max_result_bytes) == (small, False)


def test_fit_json_scrubs_what_cannot_be_sent() -> None:
    value, _ = fit_json({"name": "bad\udcff.txt", "x": math.inf, "y": [math.nan]}, 1024)
    assert value == {"name": "bad\ufffd.txt", "x": "inf", "y": ["nan"]}
    json.dumps(value, allow_nan=False).encode("utf-8")


# ----------------------------------------------------------------------------- one door for spawning

SPAWNING_CALLS = {
    "subprocess": {"run", "Popen", "call", "check_call", "check_output", "getoutput", "getstatusoutput"},
    "os": {
        "system",
        "popen",
        "fork",
        "forkpty",
        "posix_spawn",
        "posix_spawnp",
        *(f"exec{s}" for s in ("l", "le", "lp", "lpe", "v", "ve", "vp", "vpe")),
        *(f"spawn{s}" for s in ("l", "le", "lp", "lpe", "v", "ve", "vp", "vpe")),
    },
    "asyncio": {"create_subprocess_exec", "create_subprocess_shell"},
    "pty": {"spawn", "fork"},
    "multiprocessing": {"Process", "Pool"},
}


def _spawns(tree: ast.AST) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.attr in SPAWNING_CALLS.get(node.value.id, ()):
                found.append(f"{node.value.id}.{node.attr} (line {node.lineno})")
        elif isinstance(node, ast.ImportFrom) and node.module in SPAWNING_CALLS:
            found += [
                f"from {node.module} import {a.name} (line {node.lineno})"
                for a in node.names
                if a.name in SPAWNING_CALLS[node.module] or a.name == "*"
            ]
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] + ([node.module] if isinstance(node, ast.ImportFrom) else [])
            found += [
                f"import of {n} (line {node.lineno})" for n in names if n in {"multiprocessing", "pty", "sh"}
            ]
    return found


def test_only_privileges_starts_programs() -> None:
    """With real uid 0 kept, a child started any other way could switch back to root."""
    package = Path(mcp_servers.__file__).parent
    offenders = {
        path.name: spawns
        for path in sorted(package.rglob("*.py"))
        if path.name != "privileges.py" and (spawns := _spawns(ast.parse(path.read_text(), str(path))))
    }
    assert offenders == {}, f"start programs through mcp_servers.privileges.run/start: {offenders}"


def test_the_spawn_check_catches_each_way_in() -> None:
    samples = [
        "import subprocess\nsubprocess.run(['id'])",
        "import os\nos.system('id')",
        "import os\nos.execvp('id', ['id'])",
        "from subprocess import Popen",
        "import asyncio\nasyncio.create_subprocess_exec('id')",
        "import pty",
    ]
    for sample in samples:
        assert _spawns(ast.parse(sample)), sample
    assert _spawns(ast.parse("import subprocess\nsubprocess.TimeoutExpired")) == []
