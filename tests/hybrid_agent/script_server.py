"""Starts ``openai_script_server.py`` processes for a test and reads what they received.

Shared by the tests of every policy that speaks HTTP through a provider SDK
(chat completions, the Responses API, the Anthropic Messages API).
"""

import json
import subprocess
import sys
import time
from pathlib import Path

SERVER = Path(__file__).with_name("openai_script_server.py")


class Log:
    """What the scripted server received, one record per HTTP request (attempts included)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @property
    def records(self) -> list[dict]:
        return [json.loads(line) for line in self.path.read_text().splitlines()] if self.path.exists() else []

    @property
    def bodies(self) -> list[dict]:
        return [r["body"] for r in self.records]

    def header(self, name: str, index: int = 0) -> str | None:
        headers = {k.lower(): v for k, v in self.records[index]["headers"].items()}
        return headers.get(name.lower())


class ScriptServers:
    """Script server processes of one test: ``start(script, path=..., key=None) -> (base URL, Log)``.

    Use as a context manager; every server it started is killed on exit.
    """

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.procs: list[subprocess.Popen] = []

    def start(self, script, path="/v1/chat/completions", key=None):
        n = len(self.procs)
        script_file = self.tmp_path / f"script{n}.json"
        script_file.write_text(json.dumps(script))
        port_file = self.tmp_path / f"port{n}"
        argv = [sys.executable, str(SERVER), str(port_file), str(script_file), path]
        proc = subprocess.Popen(argv + ([key] if key is not None else []))
        self.procs.append(proc)
        deadline = time.monotonic() + 30
        while not port_file.exists():  # polls the port file (state), not a guessed start-up time
            assert proc.poll() is None and time.monotonic() < deadline, "server did not start"
            time.sleep(0.01)
        return f"http://127.0.0.1:{port_file.read_text()}", Log(Path(str(port_file) + ".requests"))

    def __enter__(self) -> "ScriptServers":
        return self

    def __exit__(self, *exc) -> None:
        for proc in self.procs:
            proc.kill()
            proc.wait()
