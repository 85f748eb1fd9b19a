"""The settle wait's rules on a scripted desktop and a virtual clock: no real time, no guesses.

The desktop is a script of what its witnesses would report at each instant: the
change count (nothing drawn here) and one app's main thread, busy, asleep on a
timer, or idle. The clock moves only when the wait sleeps between its polls.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field, replace

import pytest
from osworld_mcp_env.guest import settle
from osworld_mcp_env.guest.settle import CpuSample, SettleConfig, Settler

MAIN = "4242"  # the app's main thread


@dataclass
class VirtualClock:
    """Stands in for the ``time`` module inside ``settle``."""

    now: float = 1000.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


@dataclass
class LoadingApp:
    """An app that computes until ``busy_until_s``, then runs a chain of short timers until
    ``chain_until_s`` (wakes every 25 ms, does a little, sleeps on a 20 ms timer; too little
    to count as busy), then sleeps on its caret's 600 ms blink timer.

    LibreOffice does this on its first document after a start: work, then a timer chain
    that ends in a repaint of the ruler some 400 ms after the last change it drew.
    """

    clock: VirtualClock
    busy_until_s: float
    chain_until_s: float
    start: float = field(init=False)

    def __post_init__(self) -> None:
        self.start = self.clock.now

    def latest(self) -> tuple[int, float]:  # the damage watch: nothing drawn
        return 0, self.start

    def sample(self) -> CpuSample:  # the CPU meter
        t = self.clock.now - self.start
        if t < self.busy_until_s:
            return CpuSample(self.clock.now, 0.0, 1, {MAIN: int(t * 1e9)}, {})
        if t < self.chain_until_s:
            wakes = int(t / 0.025)
            return CpuSample(self.clock.now, 0.0, 0, {MAIN: 10**12 + wakes}, {MAIN: 20.0})
        return CpuSample(self.clock.now, 0.0, 0, {MAIN: 2 * 10**12}, {MAIN: 600.0})


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> VirtualClock:
    virtual = VirtualClock()
    monkeypatch.setattr(settle, "time", virtual)
    return virtual


CONFIG = SettleConfig(first_change_ms=50.0, quiet_ms=50.0, max_ms=5000.0)


def test_a_wait_without_input_waits_for_timers_that_follow_work(clock):
    # The horizon runs from the last busy moment (0.45 s), so the chain's timers up to
    # 0.8 s are announced; the blink after it is not.
    app = LoadingApp(clock, busy_until_s=0.45, chain_until_s=0.8)
    waited_ms = Settler(app, app).wait(CONFIG)
    assert 800 <= waited_ms <= 800 + CONFIG.first_change_ms + 2 * CONFIG.poll_ms


def test_a_chain_that_outlives_the_horizon_after_the_work_is_not_waited_for(clock):
    # 0.4 s after the last busy moment, the chain's timers are no longer the work's.
    app = LoadingApp(clock, busy_until_s=0.45, chain_until_s=3.0)
    waited_ms = Settler(app, app).wait(CONFIG)
    assert 850 <= waited_ms <= 850 + CONFIG.first_change_ms + 2 * CONFIG.poll_ms


def test_after_an_input_the_horizon_runs_from_the_input(clock):
    # After an input, only timers due within the horizon of the input count (LibreOffice
    # answers a pointer motion with timer cascades): the chain past 0.4 s is not waited for.
    app = LoadingApp(clock, busy_until_s=0.45, chain_until_s=0.8)
    settler = Settler(app, app)
    mark = settler.mark()
    waited_ms = settler.wait(CONFIG, mark)
    assert 450 <= waited_ms <= 450 + CONFIG.first_change_ms + 2 * CONFIG.poll_ms


@dataclass
class SlowMeter:
    """A still desktop whose every sample costs ``cost_s`` (reading /proc in a VM under TCG)."""

    clock: VirtualClock
    cost_s: float
    polls: list[float] = field(default_factory=list)  # when each sample started

    def latest(self) -> tuple[int, float]:
        return 0, 0.0

    def sample(self) -> CpuSample:
        self.polls.append(self.clock.now)
        self.clock.now += self.cost_s
        return CpuSample(self.clock.now, 0.0, 0, {MAIN: 1}, {})


def _gaps_ms(starts: list[float]) -> list[float]:
    return [round((later - earlier) * 1000, 6) for earlier, later in itertools.pairwise(starts)]


def test_polls_start_poll_ms_apart_and_one_that_overran_is_followed_at_once(clock):
    quick = SettleConfig(first_change_ms=6.0, poll_ms=2.0)
    cheap = SlowMeter(clock, cost_s=0.0005)
    Settler(cheap, cheap).wait(quick, Settler(cheap, cheap).mark())
    assert _gaps_ms(cheap.polls[1:]) == [2.0, 2.0]  # after the mark's sample
    # A 3 ms sample: the next poll starts as the last one ends, so the desktop counts as
    # settled 6 ms after the input at the second poll's end (8 ms), not after two sleeps (10 ms).
    slow = SlowMeter(clock, cost_s=0.003)
    settler = Settler(slow, slow)
    mark = settler.mark()
    assert settler.wait(quick, mark) == pytest.approx(8.0)
    assert _gaps_ms(slow.polls[1:]) == [3.0]


@dataclass
class SetUpApp:
    """An office right after a task's setup: its document was drawn ``drawn_s`` before the
    wait (negative), and it never draws again. Its main loop wakes every 150 ms on its
    timer (too briefly to count as busy) and runs at each of ``wakes`` ((seconds from
    the wait's start, CPU seconds used, taking as much wall time)).
    """

    clock: VirtualClock
    drawn_s: float
    wakes: tuple[tuple[float, float], ...] = ()
    start: float = field(init=False)

    def __post_init__(self) -> None:
        self.start = self.clock.now

    def latest(self) -> tuple[int, float]:  # the damage watch: one change, the setup's
        return 1, self.start + self.drawn_s

    def sample(self) -> CpuSample:  # the CPU meter
        t = self.clock.now - self.start
        used = sum(min(cpu, max(0.0, t - at)) for at, cpu in self.wakes)
        running = any(at <= t < at + cpu for at, cpu in self.wakes)
        ran = int(t / 0.15) + sum(1 for at, _cpu in self.wakes if at <= t)
        timers = {} if running else {MAIN: 150.0 - (t * 1000) % 150.0}
        return CpuSample(self.clock.now, used, int(running), {MAIN: 10**9 + ran}, timers)


# The reset's thresholds (env.episode.RESET_SETTLE) on the test's short windows.
SETUP = SettleConfig(first_change_ms=50.0, quiet_ms=50.0, max_ms=5000.0, prior_change_ms=400.0, work_ms=2.0)
# LibreOffice's main loop once a document loaded: a 0.8 ms burst every 300 ms, for ever
# (between two polls 2 ms apart: 40 % of a core, busy).
TICKS = tuple((0.101 + 0.3 * k, 0.0008) for k in range(20))
SLACK_MS = 2 * SETUP.poll_ms


def test_timer_ticks_keep_a_plain_wait_going_but_not_a_reset_wait(clock):
    # Without work_ms every tick is busy and pushes the horizon 400 ms on: the wait
    # never ends before its cap, on a screen that stopped changing before it began.
    plain = SettleConfig(first_change_ms=50.0, quiet_ms=50.0, max_ms=5000.0)
    app = SetUpApp(clock, drawn_s=-0.12, wakes=TICKS)
    assert Settler(app, app).wait(plain) >= plain.max_ms
    # The reset's wait: the horizon runs from the drawing (0.28 s), so only the timer due
    # at 0.15 s is announced; the tick at 0.1 s is activity, not work; then 50 ms quiet.
    app = SetUpApp(clock, drawn_s=-0.12, wakes=TICKS)
    assert 200 <= Settler(app, app).wait(SETUP) <= 200 + SLACK_MS


def test_work_after_the_setup_still_pushes_the_reset_wait_horizon(clock):
    # 5 ms of work at 0.1 s (Writer's post-load layout, which repaints ~250 ms later): the
    # horizon moves to ~0.505 s, so the timer due at 0.45 s is announced, then 50 ms quiet.
    work = ((0.1, 0.005),)
    app = SetUpApp(clock, drawn_s=-0.12, wakes=work)
    assert 500 <= Settler(app, app).wait(SETUP) <= 500 + SLACK_MS
    # The same work under a higher work threshold is no work: it ends as a still desktop.
    app = SetUpApp(clock, drawn_s=-0.12, wakes=work)
    assert 200 <= Settler(app, app).wait(replace(SETUP, work_ms=10.0)) <= 200 + SLACK_MS


def test_only_a_change_drawn_within_prior_change_ms_counts_as_the_setups(clock):
    # Drawn 120 ms before: the horizon is at 0.28 s, the timer due at 0.15 s the last announced.
    recent = SetUpApp(clock, drawn_s=-0.12)
    assert 200 <= Settler(recent, recent).wait(SETUP) <= 200 + SLACK_MS
    # Drawn 1 s before: not the setup's drawing. The horizon runs from the wait's start
    # (0.4 s: timers announced until 0.3 s) and nothing drew, so first_change_ms follows.
    old = SetUpApp(clock, drawn_s=-1.0)
    assert 350 <= Settler(old, old).wait(SETUP) <= 350 + SLACK_MS
    # After an input, prior_change_ms and work_ms do nothing: the input's reaction is waited for.
    after = SetUpApp(clock, drawn_s=-0.12)
    settler = Settler(after, after)
    plain = replace(SETUP, prior_change_ms=0.0, work_ms=0.0)
    assert settler.wait(SETUP, settler.mark()) == settler.wait(plain, settler.mark())
