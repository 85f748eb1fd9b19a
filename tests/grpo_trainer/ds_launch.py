"""Running trainer code under DeepSpeed on CPU from a test: subprocess env and the launcher.

DeepSpeed's process group lives for the rest of a process, so every DeepSpeed run of
the tests is a subprocess: ``python -c`` for one rank (the backend makes its own
one-rank group), the ``deepspeed`` launcher for several. ``DS_ACCELERATOR=cpu``
selects the CPU accelerator (gloo); the first run JIT-builds DeepSpeed's shm op
(about 25 s on 2 cores, then cached in ~/.cache/torch_extensions).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
LAUNCHER = str(Path(sys.executable).parent / "deepspeed")
RENDEZVOUS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


def ds_env() -> dict[str, str]:
    """This environment on the CPU accelerator, with the test helpers importable, no stale rendezvous."""
    env = {k: v for k, v in os.environ.items() if k not in RENDEZVOUS}
    return {**env, "DS_ACCELERATOR": "cpu", "PYTHONPATH": str(HERE)}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def launch(ranks: int, args: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    """``deepspeed --num_gpus RANKS ARGS`` (CPU ranks), output captured."""
    command = [LAUNCHER, "--num_gpus", str(ranks), "--master_port", str(free_port()), *args]
    return subprocess.run(command, env=ds_env(), capture_output=True, text=True, timeout=timeout)


def one_rank(script: str, args: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    """``python -c SCRIPT ARGS`` on the CPU accelerator, output captured."""
    command = [sys.executable, "-c", script, *args]
    return subprocess.run(command, env=ds_env(), capture_output=True, text=True, timeout=timeout)
