"""trycua's cua-computer-server as a benchmark peer: its own venv, its own Xvfb, its own Calc.

``bench_env.py --peer cua`` compares our env with cua on the same operations in one
run. This module only brings the peer up and takes it down; the timings on the
peer's side are taken by ``bench_peer_cua_client.py`` under the peer's interpreter.

The peer is what cua runs inside its Linux container, without the container:
Xvfb at 1920x1080x24 (no TCP listener; a display number Xvfb picks itself),
openbox with its stock configuration, LibreOffice Calc on a new sheet (HOME is a
fresh copy of our episode-start home, so both Calcs start with the same
settings) and ``python -m computer_server`` bound to 127.0.0.1 on a free port.
cua-computer-server lives in ``/tmp/bench-cua-venv``, created with uv on first use
(0.3.46 needs Python 3.12 or 3.13; uv cannot download one here, so an installed
one is looked up; FastAPI is held below 0.145, see :func:`ensure_venv`). Nothing of
it enters the project's venv.

Every process starts in a session of its own and :meth:`CuaPeer.close` kills each
whole process group, then checks that none is left; ``bench_env.py`` turns SIGTERM
and SIGHUP into an exit so that this also runs then, as it does on Ctrl-C or error.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from osworld_mcp_env.backends.local.home import write_home

CUA_VERSION = "0.3.46"
FASTAPI_BELOW = "0.145"
MARKER = "BENCH_PEER_CUA"  # in the environment of every peer process; its value is one peer's id
FASTAPI_BELOW_TUPLE = (0, 145)
CLIENT = Path(__file__).with_name("bench_peer_cua_client.py")
# cua-computer-server 0.3.46 declares Python >=3.12,<3.14.
PYTHON_CANDIDATES = (
    "python3.12",
    "python3.13",
    *sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.1[23].*/bin/python3"))),
)


@dataclass(frozen=True)
class CuaPeerConfig:
    """Where and how the peer runs.

    Attributes:
        venv: The peer's own virtual environment (created when it lacks the pinned server).
        version: The cua-computer-server release installed there.
        python: Interpreter for a new venv; empty: the first of :data:`PYTHON_CANDIDATES` that runs.
        workdir: Scratch folder (HOME, logs, results); emptied at start, removed at close.
        screen: Xvfb's screen, the size our env's desktop has.
        start_timeout_s: Deadline for Xvfb, Calc and the server to come up, each.
    """

    venv: Path = Path("/tmp/bench-cua-venv")
    version: str = CUA_VERSION
    python: str = ""
    workdir: Path = Path("/tmp/bench-cua-run")
    screen: str = "1920x1080x24"
    start_timeout_s: float = 120.0


class PeerError(RuntimeError):
    """The peer could not be installed or started; the message carries the tool's own error text."""


def ensure_venv(config: CuaPeerConfig) -> Path:
    """The peer's interpreter, after installing the pinned server (and numpy, for the client) if missing."""
    python = config.venv / "bin" / "python"
    if _venv_ready(python, config.version):
        return python
    if not python.exists():
        _run(["uv", "venv", "--python", config.python or _find_python(), str(config.venv)])
    # 0.3.46 passes FastAPI(websocket_max_size=...), which FastAPI took into **extra until 0.145
    # and refuses since ("unexpected keyword argument 'websocket_max_size'"): the server would not start.
    pins = [f"cua-computer-server=={config.version}", f"fastapi<{FASTAPI_BELOW}", "numpy"]
    _run(["uv", "pip", "install", "--python", str(python), *pins])
    return python


def _venv_ready(python: Path, version: str) -> bool:
    if not python.exists():
        return False
    probe = (
        "import importlib.metadata as m, numpy; print(m.version('cua-computer-server'), m.version('fastapi'))"
    )
    done = subprocess.run([str(python), "-c", probe], capture_output=True, text=True)
    if done.returncode != 0:
        return False
    server, fastapi = done.stdout.split()
    return server == version and tuple(map(int, fastapi.split(".")[:2])) < FASTAPI_BELOW_TUPLE


def _find_python() -> str:
    for candidate in PYTHON_CANDIDATES:
        try:
            done = subprocess.run([candidate, "-c", "pass"], capture_output=True)
        except OSError:
            continue
        if done.returncode == 0:
            return candidate
    raise PeerError(
        f"cua-computer-server {CUA_VERSION} needs Python 3.12 or 3.13; none of {PYTHON_CANDIDATES} runs"
    )


def _run(cmd: list[str], env: dict[str, str] | None = None) -> None:
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise PeerError(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stderr[-3000:]}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class CuaPeer:
    """The running peer; use as a context manager so that its processes die with the block."""

    config: CuaPeerConfig = field(default_factory=CuaPeerConfig)
    python: Path = Path()
    url: str = ""
    _procs: list[subprocess.Popen] = field(default_factory=list)
    _env: dict[str, str] = field(default_factory=dict)
    _marker: str = field(default_factory=lambda: uuid.uuid4().hex)

    def __enter__(self) -> CuaPeer:
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def start(self) -> None:
        self.python = ensure_venv(self.config)
        work = self.config.workdir
        shutil.rmtree(work, ignore_errors=True)
        (work / "home").mkdir(parents=True)
        write_home(work / "home")
        self._env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(work / "home"),
            "LANG": "C.UTF-8",
            # cua reports usage to PostHog unless told not to; nothing here may leave the machine.
            "DO_NOT_TRACK": "1",
            "CUA_TELEMETRY_ENABLED": "false",
            MARKER: self._marker,
        }
        self._env["DISPLAY"] = self._start_xvfb()
        self._spawn(["openbox"], "openbox.log")
        self._spawn(["soffice", "--calc", "--norestore", "--nologo"], "soffice.log")
        self._maximize_calc()
        port = _free_port()
        server = [str(self.python), "-m", "computer_server", "--host", "127.0.0.1", "--port", str(port)]
        self._spawn([*server, "--log-level", "warning"], "server.log")
        self._wait_for_server(port)
        self.url = f"ws://127.0.0.1:{port}/ws"

    def measure(self, iterations: int) -> dict[str, float]:
        """One run of the client (screenshot, click, type and staleness timings) against the peer."""
        out = self.config.workdir / "result.json"
        out.unlink(missing_ok=True)
        cmd = [str(self.python), str(CLIENT), self.url, str(iterations), str(out)]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120 + 10 * iterations)
        if done.returncode != 0:
            raise PeerError(
                f"the cua client failed ({done.returncode}):\n{done.stderr[-3000:]}{self._log_tail()}"
            )
        return json.loads(out.read_text())

    def close(self) -> None:
        """Kills every process this peer started and checks that none is left.

        Each process group gets TERM, then KILL; then every process that carries this
        peer's marker in its environment is killed too: D-Bus, which Calc autolaunches,
        forks into a session of its own and would escape the groups.
        """
        for proc in reversed(self._procs):
            _kill_group(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 5
        for proc in self._procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            _kill_group(proc.pid, signal.SIGKILL)
            proc.wait()
        self._procs.clear()
        marker = f"{MARKER}={self._marker}".encode()
        deadline = time.monotonic() + 5  # a killed process leaves /proc only once it is reaped
        while (left := _marked_pids(marker)) and time.monotonic() < deadline:
            for pid in left:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.1)
        shutil.rmtree(self.config.workdir, ignore_errors=True)
        if left:
            raise PeerError(f"processes {left} of the cua peer survived SIGKILL")

    def _spawn(self, cmd: list[str], log: str, **kwargs: object) -> subprocess.Popen:
        with open(self.config.workdir / log, "wb") as out:
            proc = subprocess.Popen(
                cmd,
                env=self._env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                **kwargs,  # type: ignore[call-overload]
            )
        self._procs.append(proc)
        return proc

    def _start_xvfb(self) -> str:
        """Starts Xvfb on a display number it picks (``-displayfd``), so it never takes another's."""
        read_fd, write_fd = os.pipe()
        try:
            cmd = [
                "Xvfb",
                "-displayfd",
                str(write_fd),
                "-screen",
                "0",
                self.config.screen,
                "-nolisten",
                "tcp",
            ]
            self._spawn(cmd, "xvfb.log", pass_fds=(write_fd,))
            os.close(write_fd)
            write_fd = -1
            # Xvfb writes the number, then a newline, and dies if the pipe is closed in between.
            reply = b""
            deadline = time.monotonic() + self.config.start_timeout_s
            while (
                b"\n" not in reply
                and select.select([read_fd], [], [], max(0, deadline - time.monotonic()))[0]
            ):
                chunk = os.read(read_fd, 64)
                if not chunk:
                    break
                reply += chunk
            number = reply.decode().strip()
        finally:
            os.close(read_fd)
            if write_fd >= 0:
                os.close(write_fd)
        if not number.isdigit():
            raise PeerError(
                f"Xvfb did not report a display within {self.config.start_timeout_s} s{self._log_tail()}"
            )
        return f":{number}"

    def _maximize_calc(self) -> None:
        """Waits for Calc's window and fills the screen with it, as our desktop shows Calc."""
        deadline = time.monotonic() + self.config.start_timeout_s
        while time.monotonic() < deadline:
            found = subprocess.run(
                ["xdotool", "search", "--onlyvisible", "--class", "libreoffice-calc"],
                env=self._env,
                capture_output=True,
                text=True,
            )
            windows = found.stdout.split()
            if windows:
                wid = windows[-1]
                xdotool = ["xdotool", "windowactivate", "--sync", wid, "windowmove", "--sync", wid, "0", "0"]
                _run([*xdotool, "windowsize", "--sync", wid, "100%", "100%"], self._env)
                return
            time.sleep(0.2)
        raise PeerError(f"no Calc window within {self.config.start_timeout_s} s{self._log_tail()}")

    def _wait_for_server(self, port: int) -> None:
        deadline = time.monotonic() + self.config.start_timeout_s
        server = self._procs[-1]
        while time.monotonic() < deadline:
            if server.poll() is not None:
                raise PeerError(f"cua-computer-server exited ({server.returncode}){self._log_tail()}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/status", timeout=2) as reply:
                    if reply.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(0.2)
        raise PeerError(f"cua-computer-server did not answer /status within {self.config.start_timeout_s} s")

    def _log_tail(self) -> str:
        tails = []
        for log in sorted(self.config.workdir.glob("*.log")):
            text = log.read_text(errors="replace")[-1500:]
            if text.strip():
                tails.append(f"\n--- {log.name}\n{text}")
        return "".join(tails)


def _kill_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _marked_pids(marker: bytes) -> list[int]:
    """Live processes whose environment holds ``marker`` (zombies have none, so they do not count)."""
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/environ", "rb") as f:
                    if marker in f.read().split(b"\0"):
                        pids.append(int(entry))
            except OSError:
                continue
    return pids
