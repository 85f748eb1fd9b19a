"""``check_python_file_by_test_suite``: OSWorld's scoring, run in the confined runner.

The suites and modules are written here by hand; the expected numbers follow OSWorld's
function (a bool is 1/0, a number is clamped, a raise is 0). The hostile suites check
the confinement itself: no host path, no host socket, a hang killed, no process left.
"""

from __future__ import annotations

import math
import os
import socket
from pathlib import Path

import pytest
from osworld_mcp_env.evaluators.confined_python import (
    EVALUATOR_UID,
    ConfinedPythonConfig,
    run_test_suite,
)
from osworld_mcp_env.evaluators.metrics.test_suite import check_python_file_by_test_suite
from osworld_mcp_env.evaluators.registry import METRICS, ZeroScore
from osworld_mcp_env.evaluators.test_suite_child import score_of

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the runner switches to its own host uid")

ADD_RIGHT = "def add(a, b):\n    return a + b\n"
ADD_WRONG = "def add(a, b):\n    return a - b\n"
SUITE = "import calc\n\ndef test():\n    print('checking')\n    return calc.add(2, 3) == 5\n"


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text)
    return path


def _evaluator_processes() -> list[str]:
    """``/proc/PID/stat`` of every live process of the evaluator's uid.

    Zombies are dead: the sandbox's first process is reparented to the host's PID 1 when
    bubblewrap exits, and reaping it is that init's business (this machine's is slow).
    """
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}").st_uid != EVALUATOR_UID:
                    continue
                with open(f"/proc/{entry}/stat") as f:
                    stat = f.read()
            except (FileNotFoundError, ProcessLookupError):
                continue
            if stat.rsplit(")", 1)[1].split()[0] != "Z":
                found.append(stat)
    return found


@pytest.mark.parametrize(
    ("value", "score"),
    [
        (True, 1.0),
        (False, 0.0),
        (0.25, 0.25),
        (3, 1.0),
        (-2, 0.0),
        ("ok", 1.0),
        ("", 0.0),
        (None, 0.0),
        ([], 0.0),
    ],
)
def test_score_of_reads_the_return_value_as_osworld(value: object, score: float) -> None:
    assert score_of(value) == score


def test_score_of_nan_is_one_as_osworlds_clamp_gives() -> None:
    # max(0.0, min(1.0, nan)): min keeps 1.0 since nan < 1.0 is False.
    assert score_of(math.nan) == 1.0


def test_the_metric_is_registered_with_its_option() -> None:
    entry = METRICS.get("check_python_file_by_test_suite")
    assert entry.options == frozenset({"test_function_name"})


@needs_root
def test_a_correct_fix_scores_one_and_a_wrong_one_zero(tmp_path: Path) -> None:
    suite = _write(tmp_path, "test_suite.py", SUITE)
    (tmp_path / "right").mkdir()
    (tmp_path / "wrong").mkdir()
    right = _write(tmp_path / "right", "calc.py", ADD_RIGHT)
    wrong = _write(tmp_path / "wrong", "calc.py", ADD_WRONG)
    assert check_python_file_by_test_suite([str(right)], str(suite)) == 1.0
    assert check_python_file_by_test_suite([str(wrong)], str(suite)) == 0.0
    assert _evaluator_processes() == []


@needs_root
def test_a_number_is_clamped_and_the_function_name_option_is_read(tmp_path: Path) -> None:
    suite = _write(tmp_path, "test_suite.py", "def check():\n    return 0.25\n\ndef test():\n    return 7\n")
    assert check_python_file_by_test_suite([], str(suite), test_function_name="check") == 0.25
    assert check_python_file_by_test_suite([], str(suite)) == 1.0


@needs_root
@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("import calc\n", "has no callable 'test'"),
        ("import no_such_module\n", "ModuleNotFoundError"),
        ("def test(:\n", "SyntaxError"),
        ("def test():\n    raise RuntimeError('boom')\n", "RuntimeError: boom"),
        ("import sys\n\ndef test():\n    sys.exit(0)\n", "SystemExit"),
        ("def test():\n    return bytearray(8 << 30)\n", "MemoryError"),
    ],
)
def test_a_suite_that_cannot_score_is_zero_with_its_reason(tmp_path: Path, text: str, reason: str) -> None:
    suite = _write(tmp_path, "test_suite.py", text)
    calc = _write(tmp_path, "calc.py", ADD_RIGHT)
    with pytest.raises(ZeroScore, match=reason):
        check_python_file_by_test_suite([str(calc)], str(suite))


def test_no_suite_or_a_missing_one_is_zero(tmp_path: Path) -> None:
    assert check_python_file_by_test_suite([], None) == 0.0
    assert check_python_file_by_test_suite([], str(tmp_path / "absent.py")) == 0.0


@needs_root
def test_a_hanging_suite_is_killed_with_its_children_and_scores_zero(tmp_path: Path) -> None:
    suite = _write(
        tmp_path,
        "test_suite.py",
        "import subprocess\n\ndef test():\n"
        "    for _ in range(3):\n        subprocess.Popen(['sleep', '1000'], start_new_session=True)\n"
        "    while True:\n        pass\n",
    )
    outcome = run_test_suite(suite, [], config=ConfinedPythonConfig(timeout_s=2.0))
    assert outcome.score == 0.0
    assert "ran past 2 s" in outcome.reason
    assert _evaluator_processes() == []


@needs_root
def test_children_left_by_a_finished_suite_are_gone_when_it_returns(tmp_path: Path) -> None:
    suite = _write(
        tmp_path,
        "test_suite.py",
        "import os, subprocess\n\ndef test():\n"
        "    subprocess.Popen(['sleep', '1000'], start_new_session=True)\n"
        "    if os.fork() == 0:\n        os.setsid()\n        os.execvp('sleep', ['sleep', '1000'])\n"
        "    return True\n",
    )
    assert run_test_suite(suite, []).score == 1.0
    assert _evaluator_processes() == []


@needs_root
def test_a_host_path_is_not_readable_from_the_suite(tmp_path: Path) -> None:
    secret = _write(tmp_path, "secret.txt", "host data")
    os.chmod(tmp_path, 0o755)
    os.chmod(secret, 0o644)  # readable by any host uid: only the mount namespace hides it
    suite = _write(
        tmp_path, "test_suite.py", f"def test():\n    return open({str(secret)!r}).read() == 'host data'\n"
    )
    with pytest.raises(ZeroScore, match="FileNotFoundError"):
        check_python_file_by_test_suite([], str(suite))


@needs_root
def test_a_host_socket_is_not_reachable_from_the_suite(tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        suite = _write(
            tmp_path,
            "test_suite.py",
            f"import socket\n\ndef test():\n    socket.create_connection(('127.0.0.1', {port}), timeout=5)\n"
            "    return True\n",
        )
        with pytest.raises(ZeroScore, match="ConnectionRefusedError"):
            check_python_file_by_test_suite([], str(suite))
        listener.setblocking(False)
        with pytest.raises(BlockingIOError):
            listener.accept()  # nothing connected


@needs_root
def test_the_agents_files_are_a_copy(tmp_path: Path) -> None:
    calc = _write(tmp_path, "calc.py", ADD_RIGHT)
    suite = _write(
        tmp_path,
        "test_suite.py",
        "def test():\n    open('calc.py', 'w').write('overwritten')\n"
        "    return open('calc.py').read() == 'overwritten'\n",
    )
    assert check_python_file_by_test_suite([str(calc)], str(suite)) == 1.0
    assert calc.read_text() == ADD_RIGHT


@needs_root
def test_the_suite_imports_the_files_fetched_beside_it_not_only_those_handed_over(tmp_path: Path) -> None:
    # A multi vm_file getter copies every file to the run folder and hands over the first
    # (its default ``gives``): the suite imports the others from its folder, as in OSWorld.
    suite = _write(tmp_path, "test_suite.py", "import main\n\ndef test():\n    return main.run() == 5\n")
    _write(tmp_path, "main.py", "import calc\n\ndef run():\n    return calc.add(2, 3)\n")
    calc = _write(tmp_path, "calc.py", ADD_RIGHT)
    assert check_python_file_by_test_suite(str(calc), str(suite)) == 1.0
    (tmp_path / "main.py").unlink()
    with pytest.raises(ZeroScore, match="No module named 'main'"):
        check_python_file_by_test_suite(str(calc), str(suite))
