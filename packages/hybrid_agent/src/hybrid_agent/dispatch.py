"""Policy calls of concurrent episodes: batched for a local model, concurrent for a server, never lockstep.

Each env of a run steps its own episode on its own thread and asks for one reply at a
time. A policy that answers each request independently (``concurrent = True``: an HTTP
client, the scripted policy) is called from that thread at once. Any other policy (a
local model generating for a batch, a custom class of unknown thread safety) gets
coalesced batches: whoever asks while a batch is generating joins the next one, which
starts the moment the current one returns. No thread waits for a slow desktop it does
not depend on, and nothing waits on a guessed time window.

``lockstep=True`` instead holds each batch until every env still at work has asked, the
old round-by-round schedule (largest batches, slowest env sets the pace); kept as an
option for comparison (``tools/bench_runner.py``) and for policies that need full batches.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Sequence

from hybrid_agent.errors import ConfigError
from hybrid_agent.policies.base import Generation, Policy, PolicyRequest


@dataclasses.dataclass
class _Slot:
    request: PolicyRequest
    answer: Generation | None = None
    failure: BaseException | None = None


class PolicyDispatcher:
    """Hands single requests of concurrent episodes to one policy.

    Args:
        policy: The policy.
        members: Threads that will ask (one per env); each calls :meth:`leave` when it has
            no more episodes, so a lockstep batch stops waiting for it.
        lockstep: Hold each batch until every member still at work has asked.
    """

    def __init__(self, policy: Policy, members: int, lockstep: bool = False) -> None:
        """See the class docstring."""
        self.policy = policy
        self.lockstep = lockstep
        self.direct = bool(getattr(policy, "concurrent", False)) and not lockstep
        self._members = members
        self._waiting: list[_Slot] = []
        self._busy = False
        self._cond = threading.Condition()

    def leave(self) -> None:
        """A member is done asking."""
        with self._cond:
            self._members -= 1
            self._cond.notify_all()

    def generate(self, request: PolicyRequest) -> Generation:
        """The policy's answer to ``request`` (latency filled in from the call when the policy left it 0).

        Raises:
            ConfigError: The policy answered a batch with the wrong number of generations.
        """
        if self.direct:
            return self._call([request])[0]
        slot = _Slot(request)
        with self._cond:
            self._waiting.append(slot)
            self._cond.notify_all()
            while slot.answer is None and slot.failure is None:
                if self._busy or not self._ready():
                    self._cond.wait()
                    continue
                batch, self._waiting, self._busy = self._waiting, [], True
                self._cond.release()
                try:
                    answers: list[Generation] | BaseException = self._call([s.request for s in batch])
                except BaseException as exc:  # handed to every asker of the batch
                    answers = exc
                finally:
                    self._cond.acquire()
                    self._busy = False
                for i, waiting in enumerate(batch):
                    if isinstance(answers, BaseException):
                        waiting.failure = answers
                    else:
                        waiting.answer = answers[i]
                self._cond.notify_all()
        if slot.failure is not None:
            raise slot.failure
        assert slot.answer is not None
        return slot.answer

    def wait_pending(self, count: int, timeout: float) -> bool:
        """Blocks until ``count`` requests wait for the next batch; ``False`` when ``timeout`` s passed first.

        For tests and benchmarks that check what a batch holds: they wait on the queue, not on a
        guessed time.
        """
        with self._cond:
            return self._cond.wait_for(lambda: len(self._waiting) >= count, timeout)

    def _ready(self) -> bool:
        return bool(self._waiting) and (not self.lockstep or len(self._waiting) >= self._members)

    def _call(self, requests: Sequence[PolicyRequest]) -> list[Generation]:
        started = time.perf_counter()
        try:
            answers = self.policy.generate(requests)
        except Exception as exc:  # a policy that raises loses its episodes, not the run
            message = f"{type(exc).__name__}: {exc}"
            return [Generation("", latency_s=time.perf_counter() - started, error=message) for _ in requests]
        if len(answers) != len(requests):
            raise ConfigError(
                f"Policy {self.policy.name!r} answered {len(answers)} of {len(requests)} requests."
            )
        share = (time.perf_counter() - started) / len(requests)
        return [a if a.latency_s else dataclasses.replace(a, latency_s=share) for a in answers]
