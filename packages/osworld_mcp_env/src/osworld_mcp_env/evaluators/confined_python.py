"""A confined runner for a task's Python test suite, which imports the agent's code.

OSWorld's ``check_python_file_by_test_suite`` imports the suite (and through it the files
the agent edited) into the evaluating process. Here that process is the host, so the
suite runs instead in a throwaway sandbox that gives the agent's code nothing the desktop
user lacks:

- its own unprivileged host uid (:data:`EVALUATOR_UID`, no account, outside every desktop
  slot's uids), no capabilities, no nested user namespaces, a new session (no terminal);
- bubblewrap namespaces: no network but its own loopback, its own PID namespace (killing
  its PID 1 ends every process it started), the host's system directories read-only and
  nothing else of the host: the suite and the agent's files are a *copy* in a temporary
  folder, removed afterwards;
- ``prlimit``: address space, processes, file size, open files and CPU seconds; the host
  kills the namespace at the wall-clock deadline.

Standard output and error go to files, so a flood costs at most ``max_file_bytes`` each.
The score is the child's (:mod:`osworld_mcp_env.evaluators.test_suite_child`) last line;
the agent's code runs in that process and could write a line of its own, as in OSWorld it
could patch the suite it is imported by: confining it keeps the host safe, not the score.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from osworld_mcp_env.backends.local.desktop import system_mounts
from osworld_mcp_env.backends.local.sandbox import SandboxProcess, read_child_pid

CHILD_SCRIPT = Path(__file__).with_name("test_suite_child.py")
# Below the desktops' uid range (userns.HOST_UID_BASE = 3,000,000): no account, no file owns it.
EVALUATOR_UID = 2_999_999
WORK_DIR = "/work"


@dataclass(frozen=True)
class ConfinedPythonConfig:
    """Limits of one confined test-suite run.

    Attributes:
        timeout_s: Wall-clock limit; past it the sandbox is killed and the score is 0
            (OSWorld's guest server gives a command 120 s).
        memory_bytes: Address-space limit of each process (``RLIMIT_AS``).
        max_processes: Processes and threads of the evaluator uid (``RLIMIT_NPROC``).
        max_file_bytes: Largest file any process writes, its output files included.
        tmp_bytes: Size of the private ``/tmp``.
        python: The interpreter inside (the system one, as the desktop user's).
    """

    timeout_s: float = 120.0
    memory_bytes: int = 2 << 30
    max_processes: int = 64
    max_file_bytes: int = 64 << 20
    tmp_bytes: int = 256 << 20
    python: str = "/usr/bin/python3"


@dataclass(frozen=True)
class SuiteOutcome:
    """What the suite scored, and why when it is no plain result of the test function."""

    score: float
    reason: str = ""


def run_test_suite(
    suite: Path,
    modules: Sequence[Path],
    *,
    function: str = "test",
    config: ConfinedPythonConfig | None = None,
) -> SuiteOutcome:
    """Runs ``function`` of ``suite`` with ``modules`` beside it, confined, and scores it.

    Args:
        suite: The task's test file (copied in as ``test_suite.py``'s own name).
        modules: The agent's files, copied in under their own names beside the suite.
        function: The suite's test function (OSWorld's ``test_function_name`` option).
        config: Limits; the defaults above when None.
    """
    config = config or ConfinedPythonConfig()
    if os.geteuid() != 0:
        return SuiteOutcome(0.0, "the confined runner needs root to run as its own uid")
    root = Path(tempfile.mkdtemp(prefix="osworld-suite-"))
    try:
        os.chmod(root, 0o711)  # bwrap resolves the bind source as the evaluator uid
        work = root / "work"
        work.mkdir(mode=0o700)
        for source in (*modules, suite):
            shutil.copyfile(source, work / source.name)
            os.chown(work / source.name, EVALUATOR_UID, EVALUATOR_UID)
        os.chown(work, EVALUATOR_UID, EVALUATOR_UID)
        shutil.copyfile(CHILD_SCRIPT, root / CHILD_SCRIPT.name)
        os.chmod(root / CHILD_SCRIPT.name, 0o644)
        return _run(root, f"{WORK_DIR}/{suite.name}", function, config)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _command(root: Path, suite: str, function: str, config: ConfinedPythonConfig, info_fd: int) -> list[str]:
    uid = str(EVALUATOR_UID)
    child = f"/run/{CHILD_SCRIPT.name}"
    return [
        "setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
        "prlimit", f"--as={config.memory_bytes}", f"--nproc={config.max_processes}",
        f"--fsize={config.max_file_bytes}", "--nofile=256", f"--cpu={math.ceil(config.timeout_s)}",
        "--",
        "bwrap", "--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent",
        "--new-session", "--cap-drop", "ALL",
        *system_mounts(),
        "--proc", "/proc", "--dev", "/dev",
        "--size", str(config.tmp_bytes), "--tmpfs", "/tmp",
        "--dir", "/run", "--ro-bind", str(root / CHILD_SCRIPT.name), child,
        "--bind", str(root / "work"), WORK_DIR, "--chdir", WORK_DIR,
        "--clearenv", "--setenv", "PATH", "/usr/bin:/bin", "--setenv", "HOME", WORK_DIR,
        "--setenv", "LANG", "C.UTF-8",
        "--info-fd", str(info_fd),
        config.python, "-I", child, suite, function,
    ]  # fmt: skip


def _run(root: Path, suite: str, function: str, config: ConfinedPythonConfig) -> SuiteOutcome:
    info_r, info_w = os.pipe()
    with open(root / "stdout", "wb") as out, open(root / "stderr", "wb") as err:
        try:
            process = subprocess.Popen(
                _command(root, suite, function, config, info_w),
                stdin=subprocess.DEVNULL, stdout=out, stderr=err, pass_fds=(info_w,),
                start_new_session=True,
            )  # fmt: skip
        except OSError as exc:
            os.close(info_r)
            return SuiteOutcome(0.0, f"the confined runner did not start: {exc}")
        finally:
            os.close(info_w)
        sandbox = SandboxProcess(process, read_child_pid(info_r, process, timeout=10.0))
        try:
            process.wait(timeout=config.timeout_s)
        except subprocess.TimeoutExpired:
            return SuiteOutcome(0.0, f"the test suite ran past {config.timeout_s:g} s and was killed")
        finally:
            sandbox.stop()  # returns once no process of the namespace is left
    return _outcome(root, process.returncode)


def _outcome(root: Path, returncode: int) -> SuiteOutcome:
    """The child's last stdout line, or why there is none."""
    lines = _tail(root / "stdout").splitlines()
    try:
        report = json.loads(lines[-1])
        score, reason = float(report["score"]), str(report["reason"])
    except (IndexError, ValueError, KeyError, TypeError):
        detail = _tail(root / "stderr").strip().splitlines()[-1:] or ["no output"]
        return SuiteOutcome(0.0, f"the test suite ended without a score (exit {returncode}): {detail[0]}")
    if not 0.0 <= score <= 1.0:
        return SuiteOutcome(0.0, f"the test suite reported {score}, outside [0, 1]")
    return SuiteOutcome(score, reason)


def _tail(path: Path, limit: int = 65536) -> str:
    with open(path, "rb") as f:
        f.seek(max(0, os.fstat(f.fileno()).st_size - limit))
        return f.read().decode("utf-8", "replace")
