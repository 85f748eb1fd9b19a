"""The settle wait: how the guest knows the screen shows the input's whole effect.

Three witnesses, each cheap and exact in time. The X server reports every
change it draws (:class:`~osworld_mcp_env.guest.damage.DamageWatch`), so no
screen is polled; the watch compares only the pixels of the boxes drawn with its
copy of the screen, and a repaint that changed none is no change (LibreOffice
repaints identical toolbars every ~300 ms after a document loaded). The kernel
reports every thread that ran or waits for a CPU (:class:`CpuMeter`, nanosecond
run times per thread), which covers what changes without drawing yet: an app that received the input and is
still computing, a document loading behind a frozen progress bar, a client
preempted on a busy host. An app that reacts to input is woken the instant the
server delivers it, so "nothing drew and nothing ran" for a few milliseconds
means nothing is coming; the windows below can be short because the CPU check
stands guard, not because apps are assumed fast.

The third witness is the apps' own timers. LibreOffice refreshes its toolbars,
Name Box, formula bar and status bar (``Sum=``) from a timer some 300 ms after
the input, without drawing or computing in between; neither damage nor CPU
shows that a change is still coming. An app's main loop sleeps in
``poll``/``epoll_wait`` with its next timer as the timeout, and
``/proc/PID/syscall`` shows it. A desktop user's main thread that the input
woke (it ran before the desktop first fell still) and that sleeps on a timer
due within ``timer_horizon_ms`` of the input is a change announced, once the
input drew something (LibreOffice's status bar timer after a click); before
anything was drawn only a timer of at most ``repaint_timer_ms`` counts (a
terminal echoes a keystroke from its repaint timer), since LibreOffice answers
a mere pointer motion with timers of hundreds of ms. Timers due later (a
caret's 500 ms blink, idle housekeeping, LibreOffice's cascade of ever longer
timers) are not waited for, nor timers of threads the input did not wake
(LibreOffice's main loop also wakes on its own).

A wait without an input (after a task's setup or a tool call changed the apps
behind the screen's back) has no reaction to tell the input's timers from the
rest: every desktop user's main thread counts as woken, every timer due within
the horizon as announced, drawn or not, and the horizon runs from the latest
drawn change or busy moment (a document takes a second to load and draw, and
LibreOffice's first document after a start ends its load in a chain of short
timers that repaints the ruler ~0.3 s after the work it follows). LibreOffice
refreshes its toolbars from a timer some 140 ms after a document is drawn; a
reset's frame taken before it shows a toolbar about to change. The syscall numbers are
x86-64's; elsewhere this witness is absent and the two others remain.

Two thresholds tune a wait without an input to what it follows; the reset's wait sets
both (``env.episode.RESET_SETTLE``), every other wait keeps 0, the rules above:

* ``prior_change_ms``: the wait continues a task's setup, so a change drawn up to that
  long before the wait counts as its own and the horizon runs from it, not from the
  wait's start. The setup's document was drawn before its last step returned (the
  office's readiness check, which itself waits for the office's pending events), and
  the timers that follow a drawing are dated from the drawing.
* ``work_ms``: a busy moment extends the horizon only once the desktop has used that
  much CPU since it was last still. LibreOffice's main loop wakes every 150-300 ms for
  0.3-0.7 ms when its timers fire; each wake, seen by a 2 ms poll, counted as busy and
  pushed the horizon on by another 400 ms, so a Calc reset waited 1.4-2.2 s on a screen
  that had stopped changing before the wait began. Real work stays covered: Writer's
  post-load layout (3-6 ms of CPU) is followed ~250 ms later by a repaint of the whole
  page, which a reset that ignored it returned without (4 of 4 resets, measured).

``tools/settle_check.py --resets`` compares each reset's first frame with the screen
2 s later over office, terminal, player and browser tasks.

The horizon depends on the app that has the focus when the input is sent
(:data:`APP_TIMER_HORIZON_MS`, :meth:`SettleConfig.for_app`): LibreOffice repaints its
formula bar, toolbars and status bar from timers 0.3-0.73 s after an input, so its
horizon is 800 ms (every Calc step settled, against 95.8 % at 400 ms); every other app
keeps 400 ms, which holds its repaints at half the wait. A wait without an input
keeps ``timer_horizon_ms``: it has no input to date an app's timers from, and
LibreOffice's main loop never sleeps longer than 150 ms, so a longer horizon would
lengthen every reset and tool call by as much.
"""

from __future__ import annotations

import os
import platform
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType

from osworld_mcp_env.guest.damage import DamageWatch
from osworld_mcp_env.guest.procfiles import KeptProcFiles

# The owner's decision (issue 29): the timer horizon of each app (``apps`` keys) whose timers fire
# later than SettleConfig.timer_horizon_ms after an input. LibreOffice's late toolbar and status-bar
# refreshes came 0.3-0.73 s after the input: 800 ms settled 144 of 144 bundled steps, 400 ms 95.8 %.
APP_TIMER_HORIZON_MS: Mapping[str, float] = MappingProxyType(
    dict.fromkeys(("libreoffice", "libreoffice_calc", "libreoffice_writer", "libreoffice_impress"), 800.0)
)


@dataclass(frozen=True)
class SettleConfig:
    """How long the desktop must stay still after an input.

    Activity is a change drawn on the screen, a thread of the desktop waiting for or
    on a CPU, the desktop using at least ``busy_fraction`` of one core between two
    polls, or the main loop of an app the input woke asleep on a timer due within
    ``timer_horizon_ms`` of the input (of at most ``repaint_timer_ms`` while nothing
    was drawn); :meth:`for_app` takes the focused app's horizon from
    ``app_timer_horizon_ms`` where it has one. The desktop counts as settled once it
    was inactive for ``quiet_ms`` after a drawn change, or for ``first_change_ms`` when
    nothing was drawn yet (the input had no visible effect). ``max_ms`` caps the wait
    for animations, playing media and processes that never rest. Polls start
    ``poll_ms`` apart, or at once after one that took longer. A wait without an input
    with ``prior_change_ms`` > 0 continues a task's setup (a change drawn up to that
    long before it counts as its own), and with ``work_ms`` > 0 a busy moment extends
    its horizon only after that much CPU time since the desktop was last still (the
    module's docstring).
    """

    first_change_ms: float = 6.0
    quiet_ms: float = 12.0
    max_ms: float = 1500.0
    poll_ms: float = 2.0
    busy_fraction: float = 0.3
    timer_horizon_ms: float = 400.0
    repaint_timer_ms: float = 50.0
    prior_change_ms: float = 0.0
    work_ms: float = 0.0
    app_timer_horizon_ms: Mapping[str, float] = field(default_factory=lambda: APP_TIMER_HORIZON_MS)

    def for_app(self, app: str) -> SettleConfig:
        """These thresholds with ``app``'s horizon (a canonical ``apps`` key; "" when nothing has focus)."""
        horizon = self.app_timer_horizon_ms.get(app, self.timer_horizon_ms)
        return self if horizon == self.timer_horizon_ms else replace(self, timer_horizon_ms=horizon)


# The longest timer horizon a request may ask for: past the wait's own cap it is meaningless.
MAX_TIMER_HORIZON_MS = 5000.0


@dataclass(frozen=True)
class CpuSample:
    """What the desktop's threads had done at one instant."""

    time: float
    """``time.monotonic()`` of the sample."""
    run_s: float
    """CPU time of every thread, except the guest server's own, in seconds."""
    runnable: int
    """Threads running, waiting for a CPU or in uninterruptible I/O at that instant."""
    main_ns: dict[str, int]
    """Run time in ns of each desktop user's main thread (by pid)."""
    timers: dict[str, float]
    """Timeout in ms of each desktop user's main thread asleep on a timer (by pid)."""


# x86-64 syscall number -> index of its millisecond timeout in /proc/PID/syscall's fields.
TIMEOUT_FIELD = {7: 3, 232: 4, 281: 4} if platform.machine() == "x86_64" else {}  # poll, epoll_(p)wait


# /proc/PID/stat's states of a thread on or waiting for a CPU (R) or reading a disk (D).
RUNNABLE = frozenset(b"RD")

# /proc/PID/stat's flags (field 9) bit for a kernel thread.
PF_KTHREAD = 0x00200000


class CpuMeter:
    """The desktop's threads, except the guest server's own.

    In a VM the guest server runs in the VM's root PID namespace, where /proc also lists
    the kernel's threads (66 of the 87 processes in our image) and the system's daemons;
    reading them all made a sample cost 134 ms under TCG. There the desktop is the
    session's cgroup (``osworld-session.service``: the session script, Xvfb, the guest
    server and every process it starts for the user), and ``cgroup.threads`` lists its
    threads in one read. The desktop user cannot leave it: moving a process needs write
    access to another cgroup's ``cgroup.procs``, which only root has. Without a cgroup
    (``cgroup=None``), every process of this PID namespace: a local desktop's sandbox
    holds only the desktop, and where the kernel's threads are visible they are skipped.
    Each thread's files stay open between samples (:class:`KeptProcFiles`).
    """

    def __init__(self, cgroup: Path | None = None) -> None:
        self._self = str(os.getpid())
        self._cgroup = cgroup
        # Kernel threads are visible only where kthreadd is: pid 2 of the root namespace.
        self._skip_kernel = cgroup is None and is_kernel_thread("2")
        self._files = KeptProcFiles()
        self._lock = threading.RLock()  # the kept files are one reader's at a time
        self._directories: set[str] = set()  # the cgroup's directories the last listing read
        self._owners: set[str] = set()  # whose files are kept: those threads and directories

    @classmethod
    def for_this_server(cls) -> CpuMeter:
        """The session's cgroup in a VM's root namespace, the namespace's processes elsewhere."""
        return cls(own_cgroup() if is_kernel_thread("2") else None)

    def threads(self) -> list[tuple[str, bool]]:
        """The threads a sample reads, each with whether it is its process's main thread."""
        if self._cgroup is not None:
            with self._lock:  # the cgroup's lists are kept files too
                return self._cgroup_threads(self._cgroup)
        threads: list[tuple[str, bool]] = []
        for pid in os.listdir("/proc"):
            if not pid.isdigit() or pid == self._self or (self._skip_kernel and is_kernel_thread(pid)):
                continue
            try:
                threads.extend((tid, tid == pid) for tid in os.listdir(f"/proc/{pid}/task"))
            except OSError:
                continue  # exited
        return threads

    def _cgroup_threads(self, cgroup: Path) -> list[tuple[str, bool]]:
        procs: set[str] = set()
        tids: list[str] = []
        self._directories = set()
        for directory in self._cgroup_directories(cgroup):
            try:
                procs.update(self._files.read_cgroup(directory, "cgroup.procs").decode().split())
                tids.extend(self._files.read_cgroup(directory, "cgroup.threads").decode().split())
            except OSError:
                continue  # removed meanwhile
            self._directories.add(directory)
        try:
            own = set(os.listdir(f"/proc/{self._self}/task"))
        except OSError:
            own = {self._self}
        return [(tid, tid in procs) for tid in tids if tid not in own]

    def _cgroup_directories(self, cgroup: Path) -> list[str]:
        """The cgroup and its descendants; walked only when ``cgroup.stat`` counts any (a VM: ~0.4 ms)."""
        root = str(cgroup)
        try:
            stat = self._files.read_cgroup(root, "cgroup.stat")
            descendants = int(stat.split(b"nr_descendants ", 1)[1].split(None, 1)[0])
        except (OSError, IndexError, ValueError):
            descendants = -1  # unreadable: walk
        if descendants == 0:
            return [root]
        return [directory for directory, _subgroups, _files in os.walk(root)]

    def sample(self) -> CpuSample:
        """Reads each thread's state and nanosecond run time (``schedstat``) from ``/proc``."""
        with self._lock:
            return self._sample()

    def _sample(self) -> CpuSample:
        # Lean on purpose: under a VM's emulated CPU each line of this loop costs microseconds.
        files = self._files
        read = files.read
        run_ns = 0
        runnable = 0
        main_ns: dict[str, int] = {}
        timers: dict[str, float] = {}
        threads = self.threads()
        for tid, main in threads:
            try:
                schedstat = read(tid, "schedstat")  # "run_ns wait_ns timeslices"
                stat = read(tid, "stat")  # "pid (comm) state ...": comm may hold ") "
                thread_ns = int(schedstat[: schedstat.index(b" ")])
                state = stat[stat.rindex(b")") + 2]
                user = main and files.owner(tid) != 0  # not the infrastructure
            except (OSError, IndexError, ValueError):
                continue  # exited
            run_ns += thread_ns
            if user:
                main_ns[tid] = thread_ns
            if state in RUNNABLE:  # on or waiting for a CPU, or reading a disk
                runnable += 1
            elif user and (timeout := _timer_ms(files, tid)) is not None:
                timers[tid] = timeout
        owners = {tid for tid, _main in threads} | self._directories
        if owners != self._owners:  # threads came or went: close the files of those gone
            files.keep_only(owners)
            self._owners = owners
        return CpuSample(time.monotonic(), run_ns / 1e9, runnable, main_ns, timers)


def own_cgroup() -> Path | None:
    """This process's cgroup v2 directory, or None at the root or without cgroup v2."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    path = next((line[3:] for line in lines if line.startswith("0::")), "/")
    directory = Path("/sys/fs/cgroup", path.lstrip("/"))
    if path in ("", "/") or not (directory / "cgroup.threads").is_file():
        return None
    return directory


def is_kernel_thread(pid: str) -> bool:
    """True when ``pid`` is a kernel thread (False when it exited or is unreadable)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            flags = int(f.read().rsplit(b")", 1)[1].split()[6])
    except (OSError, IndexError, ValueError):
        return False
    return bool(flags & PF_KTHREAD)


def _timer_ms(files: KeptProcFiles, tid: str) -> float | None:
    """The timeout a sleeping thread waits on in poll or epoll (None: none or unknown)."""
    try:
        fields = files.read(tid, "syscall").split()
        index = TIMEOUT_FIELD.get(int(fields[0]))
        if index is None:
            return None
        timeout = int(fields[index], 16) & 0xFFFFFFFF
    except (OSError, IndexError, ValueError):
        return None  # running again, exited, or not in a syscall
    return None if timeout >= 0x80000000 else float(timeout)  # negative: no timeout


@dataclass(frozen=True)
class SettleMark:
    """The desktop's state just before an input, so the wait counts what the input caused."""

    changes: int
    cpu: CpuSample


class Settler:
    """Waits until the desktop is still, from damage reports and thread run times."""

    def __init__(self, damage: DamageWatch, cpu: CpuMeter | None = None) -> None:
        self._damage = damage
        self._cpu = cpu or CpuMeter.for_this_server()

    def mark(self) -> SettleMark:
        """Taken before an input: changes and work after it count as the input's."""
        return SettleMark(self._damage.latest()[0], self._cpu.sample())

    def wait(self, config: SettleConfig, mark: SettleMark | None = None) -> float:
        """Blocks until the desktop is still or ``config.max_ms`` passed; returns milliseconds waited.

        Args:
            config: The thresholds.
            mark: Taken before the input; without it the wait starts from now and
                waits for every timer due within the horizon (the module's docstring).
        """
        start = time.monotonic()
        after_input = mark is not None
        mark = mark or self.mark()
        changes, previous = mark.changes, mark.cpu
        horizon = start + config.timer_horizon_ms / 1000
        due: dict[str, tuple[int, float]] = {}  # main thread -> (its run ns, when its timer fires)
        # Main threads that ran while the desktop reacted to the input (without one: all).
        woken: set[str] = set() if after_input else set(mark.cpu.main_ns)
        reacting = True
        drawn = False
        last_activity = start
        if not after_input and config.prior_change_ms > 0:  # a setup's wait: was it drawing just before?
            last_drawn_before = self._damage.latest()[1]
            if start - last_drawn_before <= config.prior_change_ms / 1000:
                drawn = True
                last_activity = last_drawn_before
                horizon = last_drawn_before + config.timer_horizon_ms / 1000
        burst_s = 0.0  # CPU time of the desktop since it was last still
        next_poll = start
        while True:
            # Polls start every poll_ms; one that overran (a sample costs ~3 ms in a VM
            # under TCG) is followed at once, so the quiet window is not stretched by sleeps.
            next_poll += config.poll_ms / 1000
            delay = next_poll - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            else:
                next_poll -= delay  # behind: poll now, never in a burst to catch up
            count, last_change = self._damage.latest()
            sample = self._cpu.sample()
            now = sample.time
            drew = count != changes
            if drew:
                changes, drawn = count, True
                last_activity = max(last_activity, last_change)
                if not after_input:
                    horizon = max(horizon, last_change + config.timer_horizon_ms / 1000)
            span = sample.time - previous.time
            ran_s = sample.run_s - previous.run_s
            used = ran_s / span if span > 0 else 0.0
            busy = bool(sample.runnable) or used >= config.busy_fraction
            burst_s = burst_s + max(0.0, ran_s) if busy else 0.0
            if reacting:
                woken |= {pid for pid, ns in sample.main_ns.items() if ns != mark.cpu.main_ns.get(pid)}
                reacting = busy or drew  # the reaction ends at the first still moment
            # Timers of the threads the input woke; a thread that ran since the last look
            # entered a new sleep, so its timer starts now. A timer of a thread that woke
            # on its own later (LibreOffice's idle cascade) is not the input's.
            timers: dict[str, tuple[int, float]] = {}
            for pid, timeout in sample.timers.items():
                if pid in woken:
                    ns, kept = sample.main_ns[pid], due.get(pid)
                    timers[pid] = kept if kept and kept[0] == ns else (ns, now + timeout / 1000)
            due = timers
            announced = any(
                now <= fires <= horizon
                and (drawn or not after_input or sample.timers[pid] <= config.repaint_timer_ms)
                for pid, (_, fires) in due.items()
            )
            if busy or announced:
                last_activity = now
            if busy and not after_input and burst_s * 1000 >= config.work_ms:  # work that may end in a timer
                horizon = max(horizon, now + config.timer_horizon_ms / 1000)
            previous = sample
            if (now - start) * 1000 >= config.max_ms:
                break
            window = config.quiet_ms if drawn else config.first_change_ms
            if (now - last_activity) * 1000 >= window:
                break
        return (time.monotonic() - start) * 1000
