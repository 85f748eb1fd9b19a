"""The desktop user's side of the session: who runs as the user, and how an episode starts clean.

The guest server runs as the sandbox's root (the infrastructure uid); everything
the agent can start (apps, commands, the bash channel, the session bus) runs as
``user`` (uid 1000). The server acts *on the user's behalf* only with the user's
credentials: processes are spawned as the user, and files the host asks for are
opened with the user's filesystem uid (:func:`as_user`), so a symlink the agent
planted resolves with the agent's rights, never the server's.

An episode starts from :meth:`UserSession.begin`: every process of the user is
killed (they cannot outlive it: the user cannot change uid), the user's writable
places are fresh size-capped tmpfs mounts or emptied of the user's files, SysV IPC
objects of the user are removed, X's root-window properties and keyboard map are
put back, the home is copied from the read-only template and a new session bus
starts. Nothing of the previous episode remains that the user could have written.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import stat
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from osworld_mcp_env.guest.transport import RequestError

MS_NOSUID, MS_NODEV = 0x2, 0x4
MNT_DETACH = 0x2
# The backend's settings for the infrastructure all start with this prefix; of those, the
# user's processes keep only the interpreter the app wrappers (``guest/bin/python``) run.
INFRA_ENV_PREFIX = "OSWORLD_"
USER_VISIBLE_INFRA_ENV = ("OSWORLD_PYTHON",)
_libc = ctypes.CDLL(None, use_errno=True)


@dataclass(frozen=True)
class SessionConfig:
    """Where and how big the user's places are; read from the environment the backend sets.

    Attributes:
        uid: The desktop user's uid (and gid).
        home: The user's home directory.
        home_template: Read-only directory copied into every fresh home.
        home_bytes: Size cap of the home tmpfs.
        shm_bytes: Size cap of ``/dev/shm``.
        run_bytes: Size cap of ``/run/user/<uid>``.
        max_file_bytes: Largest file :func:`read_user_file` returns.
    """

    uid: int = 1000
    home: Path = Path("/home/user")
    home_template: Path | None = None
    home_bytes: int = 2048 * 2**20
    shm_bytes: int = 512 * 2**20
    run_bytes: int = 64 * 2**20
    max_file_bytes: int = 128 * 2**20

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> SessionConfig:
        """The configuration the backend put into the session's environment."""
        env = dict(os.environ if env is None else env)
        mb = 2**20
        template = env.get("OSWORLD_HOME_TEMPLATE")
        return cls(
            uid=int(env.get("OSWORLD_DESKTOP_UID", cls.uid)),
            home=Path(env.get("HOME", str(cls.home))),
            home_template=Path(template) if template else None,
            home_bytes=int(env.get("OSWORLD_HOME_MB", cls.home_bytes // mb)) * mb,
            shm_bytes=int(env.get("OSWORLD_SHM_MB", cls.shm_bytes // mb)) * mb,
            run_bytes=int(env.get("OSWORLD_RUN_MB", cls.run_bytes // mb)) * mb,
            max_file_bytes=int(env.get("OSWORLD_MAX_FILE_BYTES", cls.max_file_bytes)),
        )

    @property
    def run_dir(self) -> Path:
        """``XDG_RUNTIME_DIR``."""
        return Path(f"/run/user/{self.uid}")


class UserSession:
    """Spawns the user's processes and resets everything the user can write."""

    def __init__(self, config: SessionConfig) -> None:
        self.config = config
        self.privileged = os.geteuid() == 0 and config.uid != 0
        self.env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(INFRA_ENV_PREFIX) or k in USER_VISIBLE_INFRA_ENV
        }
        self.env["HOME"] = str(config.home)
        self._bus: subprocess.Popen | None = None
        self._lock = threading.Lock()

    # --- spawning -------------------------------------------------------------
    def popen_kwargs(self) -> dict[str, Any]:
        """Keyword arguments that make a Popen run as the user, in its home, with its environment."""
        kwargs: dict[str, Any] = {"env": dict(self.env), "cwd": str(self.config.home)}
        if self.privileged:
            kwargs.update(user=self.config.uid, group=self.config.uid, extra_groups=[])
        return kwargs

    def user_pids(self) -> list[int]:
        """Live pids whose real uid is the user's (the tool host only borrows the user's effective uid)."""
        found = []
        for entry in os.listdir("/proc"):
            if entry.isdigit() and _real_uid(int(entry)) == self.config.uid:
                found.append(int(entry))
        return found

    def kill_user_processes(self, timeout: float = 10.0) -> int:
        """SIGKILLs every process of the user, forks included; returns how many there were.

        ``kill(-1, SIGKILL)`` sent *as the user* reaches exactly the user's processes
        in this PID namespace (nested namespaces included) and is atomic against
        fork, so a fork bomb is gone after one round; the loop only waits for the
        kernel to finish them. The sender is a bare fork that changes uid and never
        executes anything: ``execve`` would fail with EAGAIN once a fork bomb has
        used up the user's ``RLIMIT_NPROC``, ``setresuid`` does not.
        """
        victims = self.user_pids()
        deadline = time.monotonic() + timeout
        while victims and self.privileged:
            _kill_all_as(self.config.uid)
            if not self.user_pids():
                break
            if time.monotonic() > deadline:
                raise RequestError(503, f"Processes of the desktop user survived {timeout:g} s of SIGKILL.")
            time.sleep(0.002)
        return len(victims)

    # --- a fresh episode ----------------------------------------------------
    def begin(self) -> dict[str, Any]:
        """Kills the user's processes and gives the user fresh places, home and session bus.

        Returns how many processes died and each phase's milliseconds (``phases_ms``), which
        ``tools/bench_env.py`` prints: the reset's cost, measured where it is spent.
        """
        phases: dict[str, float] = {}
        mark = time.perf_counter()

        def phase(name: str) -> None:
            nonlocal mark
            now = time.perf_counter()
            phases[name] = (now - mark) * 1000
            mark = now

        with self._lock:
            killed = self.kill_user_processes()
            phase("kill")
            if self.privileged:
                cfg = self.config
                _mount_tmpfs(cfg.home, cfg.home_bytes, 0o700, cfg.uid)
                _mount_tmpfs(cfg.run_dir, cfg.run_bytes, 0o700, cfg.uid)
                _mount_tmpfs(Path("/dev/shm"), cfg.shm_bytes, 0o1777, 0)
                _mount_tmpfs(Path("/var/tmp"), 16 * 2**20, 0o1777, 0)
                phase("mounts")
                _remove_user_files(Path("/tmp"), cfg.uid)
                _remove_user_ipc(cfg.uid)
                phase("tmp_ipc")
                self._copy_home_template()
                phase("home")
            self._start_bus()
            phase("bus")
            return {"killed": killed, "phases_ms": phases}

    def _copy_home_template(self) -> None:
        template = self.config.home_template
        if template is None or not template.is_dir():
            return
        done = subprocess.run(
            ["cp", "-r", "--preserve=mode,timestamps", f"{template}/.", str(self.config.home)],
            **{**self.popen_kwargs(), "cwd": "/"},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise RequestError(500, f"Copying the home template failed: {done.stderr[-400:]}")
        with as_user(self.config.uid):
            os.chmod(self.config.home, 0o700)  # the copy gave it the template's 0755

    def _start_bus(self) -> None:
        """A new session bus for the user (AT-SPI starts from it on demand)."""
        address = self.env.get("DBUS_SESSION_BUS_ADDRESS", "")
        if not address.startswith("unix:path=") or shutil.which("dbus-daemon") is None:
            return
        socket_path = Path(address.removeprefix("unix:path="))
        self._bus = subprocess.Popen(
            ["dbus-daemon", "--session", f"--address={address}", "--nofork", "--nopidfile", "--syslog-only"],
            **self.popen_kwargs(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + 10
        while not socket_path.is_socket():
            if self._bus.poll() is not None or time.monotonic() > deadline:
                raise RequestError(503, "The session bus did not start.")
            time.sleep(0.002)


@contextlib.contextmanager
def as_user(uid: int) -> Iterator[None]:
    """Runs the block with the user's filesystem uid and gid, in this thread only.

    ``setfsuid`` is per thread (glibc does not broadcast it), and switching away from
    uid 0 drops the file capabilities, so paths resolve exactly as for the user.
    """
    if os.geteuid() != 0 or uid == 0:
        yield
        return
    _libc.setfsgid(uid)
    _libc.setfsuid(uid)
    try:
        yield
    finally:
        _libc.setfsuid(0)
        _libc.setfsgid(0)


def read_user_file(path: str, uid: int, max_bytes: int) -> bytes | None:
    """The bytes of a regular file the user can read, or None when there is none.

    Raises:
        RequestError: 413 when the file is larger than ``max_bytes``; 403 for files
            of the kernel's pseudo filesystems (``/proc``, ``/sys``, ``/dev``).
    """
    with as_user(uid):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
        except OSError:
            return None
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None  # a FIFO or a device would block or never end
        real = os.readlink(f"/proc/self/fd/{fd}")
        if real.startswith(("/proc/", "/sys/", "/dev/")):
            raise RequestError(403, f"{path} resolves to {real}, which is not a document.")
        if info.st_size > max_bytes:
            raise RequestError(413, f"{path} has {info.st_size} bytes; the cap is {max_bytes}.")
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise RequestError(413, f"{path} grew past the cap of {max_bytes} bytes while being read.")
    return data


def _mount_tmpfs(target: Path, size: int, mode: int, uid: int) -> None:
    """Replaces whatever is mounted on ``target`` with an empty tmpfs."""
    target.mkdir(parents=True, exist_ok=True)
    _libc.umount2(str(target).encode(), MNT_DETACH)  # nothing mounted yet is fine
    options = f"size={size},mode={mode:o},uid={uid},gid={uid}".encode()
    if _libc.mount(b"tmpfs", str(target).encode(), b"tmpfs", MS_NOSUID | MS_NODEV, options) != 0:
        errno = ctypes.get_errno()
        raise RequestError(500, f"Cannot mount a tmpfs on {target}: {os.strerror(errno)}")


def _remove_user_files(directory: Path, uid: int) -> None:
    """Deletes the user's entries of a shared directory (``/tmp``), recursing into the others'."""
    with os.scandir(directory) as entries:
        for entry in entries:
            info = entry.stat(follow_symlinks=False)
            if info.st_uid == uid:
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path, ignore_errors=True)
                else:
                    with contextlib.suppress(OSError):
                        os.unlink(entry.path)
            elif entry.is_dir(follow_symlinks=False):
                _remove_user_files(Path(entry.path), uid)


def _remove_user_ipc(uid: int) -> None:
    """Removes the user's System V shared memory, semaphores and message queues."""
    args: list[str] = []
    for kind, flag, uid_column in (("shm", "-m", 7), ("sem", "-s", 4), ("msg", "-q", 7)):
        try:
            lines = Path(f"/proc/sysvipc/{kind}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            columns = line.split()
            if len(columns) > uid_column and int(columns[uid_column]) == uid:
                args += [flag, columns[1]]
    if args:
        subprocess.run(["ipcrm", *args], capture_output=True, check=False)


def _kill_all_as(uid: int) -> None:
    """``kill(-1, SIGKILL)`` from a child that is ``uid`` (the server itself must not change uid)."""
    pid = os.fork()
    if pid == 0:  # only raw system calls from here on, then _exit
        try:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            os.kill(-1, signal.SIGKILL)
        except BaseException:
            os._exit(1)
        os._exit(0)
    os.waitpid(pid, 0)


def _real_uid(pid: int) -> int | None:
    """The real uid of a live process; None for zombies and vanished pids."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("State:") and line.split()[1] in ("Z", "X"):
                    return None
                if line.startswith("Uid:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None
