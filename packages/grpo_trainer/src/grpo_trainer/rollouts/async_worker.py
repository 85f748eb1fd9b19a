"""Async mode: a rollout thread produces the next steps' groups while the learner updates.

As in verl's and OpenRLHF's async trainers on one process, a producer (here a
thread, :class:`RolloutWorker`) rolls out step after step into a bounded queue
with its own copy of the policy, and the learner consumes one step's groups at a
time, updates, and publishes its weights to the copy
(:meth:`~grpo_trainer.model.policy.VersionedPolicy.publish`), between two model calls. Every
step sample carries the version of the weights that produced it and the
log-probabilities they gave, so the clipped ratio and the KL of a stale sample
are taken against the policy that really acted. A group whose oldest sample is
more than ``max_staleness`` versions (optimizer updates) behind the weights being updated is dropped
(:func:`split_stale`) and counted.

The thread never touches the backend: on ZeRO-3 the learner gathers the weights
(a collective, the same step on every rank) to publish them, and the copy is taken
before the backend partitions the module.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from grpo_trainer.errors import GRPOError
from grpo_trainer.rollouts.episode import Episode

__all__ = ["RolloutBatch", "RolloutWorker", "RolloutWorkerError", "is_stale", "oldest_version", "split_stale"]

Group = list[Episode]


def oldest_version(group: Sequence[Episode]) -> int | None:
    """The lowest policy version among a group's step samples (``None``: it has none)."""
    versions = [s.policy_version for e in group for s in e.samples]
    return min(versions) if versions else None


def is_stale(oldest: int | None, current: int, max_staleness: int) -> bool:
    """Whether a group whose oldest sample is version ``oldest`` is too old to train ``current`` on.

    Stale when ``current - oldest > max_staleness``; a group without samples is not
    (the group filter drops it anyway).
    """
    return oldest is not None and current - oldest > max_staleness


def split_stale(groups: Sequence[Group], current: int, max_staleness: int) -> tuple[list[Group], list[Group]]:
    """``(fresh, stale)`` groups, in order, for the learner at weights version ``current``."""
    fresh: list[Group] = []
    stale: list[Group] = []
    for group in groups:
        (stale if is_stale(oldest_version(group), current, max_staleness) else fresh).append(group)
    return fresh, stale


class RolloutWorkerError(GRPOError, RuntimeError):
    """The rollout thread raised; the original exception is the ``__cause__``."""


@dataclass(frozen=True)
class RolloutBatch:
    """One step's groups from the rollout thread.

    Attributes:
        step: The step whose tasks and seeds were rolled out.
        groups: This rank's groups of that step.
        seconds: How long the thread took to roll them out.
    """

    step: int
    groups: list[Group]
    seconds: float


class RolloutWorker:
    """Rolls out ``steps`` in order on a thread; at most ``queue_size`` finished batches wait.

    The thread starts the next step as soon as the queue has room, so it runs up to
    ``queue_size + 1`` steps ahead of the step the learner is updating on.
    """

    def __init__(self, produce: Callable[[int], list[Group]], steps: range, queue_size: int) -> None:
        """Starts the thread.

        Args:
            produce: ``step -> groups``: the Trainer's rollout of one step.
            steps: The steps to roll out, in order.
            queue_size: Finished batches that may wait for the learner.
        """
        self._queue: queue.Queue[RolloutBatch | BaseException] = queue.Queue(maxsize=queue_size)
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(produce, steps), name="grpo-rollout", daemon=True
        )
        self._thread.start()

    def _run(self, produce: Callable[[int], list[Group]], steps: range) -> None:
        try:
            for step in steps:
                if self._stop.is_set():
                    return
                start = time.perf_counter()
                groups = produce(step)
                self._put(RolloutBatch(step, groups, time.perf_counter() - start))
        except BaseException as error:  # handed to the learner, which raises it
            self._put(error)

    def _put(self, item: RolloutBatch | BaseException) -> None:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.5)
                return
            except queue.Full:
                continue

    def next(self) -> RolloutBatch:
        """The next step's batch, waiting for it; raises :class:`RolloutWorkerError` if the thread failed."""
        item = self._queue.get()
        if isinstance(item, BaseException):
            raise RolloutWorkerError(f"The rollout thread failed: {item!r}") from item
        return item

    def close(self) -> None:
        """Stops the thread after the step it is rolling out, and waits for it."""
        self._stop.set()
        self._thread.join()
