"""``ax.act``'s batch: ordered steps and waits, stopped at the first failure, with evidence per step.

A step is an operation on a ref (``{"op": "press", "ref": "e12"}``) or a wait that emits no
input (``{"wait": "window", "name": "Save As"}``). Waits poll the worker until their condition
holds; all waits of one batch share :data:`WAIT_BUDGET_S` (and what is left of the caller's
deadline). The first failure stops the batch: the result names the step (``stopped_at``, from 0),
the steps completed before it with their evidence, and whether the failed step emitted input.
A batch keeps to the application whose window had the focus when it began: once that
application has no window left (it exited, was killed), a wait stops within
:data:`CONTINUITY_S` and a later key or typing is not sent (``desktop_error``), instead of
waiting out its timeout or typing into whatever has the focus now.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from osworld_mcp_env.ax.link import WorkerFault, WorkerLink
from osworld_mcp_env.ax.records import (
    REF_PATTERN,
    FailureCode,
    Op,
    Record,
    UntrustedAnswer,
    WaitKind,
    parse_records,
)

MAX_STEPS = 64
WAIT_BUDGET_S = 60.0
DEFAULT_WAIT_S = 10.0
STABLE_MS = 300.0
POLL_S = 0.1
REQUEST_S = 15.0  # one worker request (an operation, a probe) may take this long
CONTINUITY_S = 0.5  # how often a wait re-checks that the batch's application still has a window
PRECONDITION_CODES = frozenset(
    {FailureCode.STALE_ELEMENT_REF, FailureCode.AMBIGUOUS_TARGET, FailureCode.UNSUPPORTED_OPERATION}
)
DESKTOP_ERROR = "desktop_error"


class StepError(ValueError):
    """A step that is malformed (checked before anything runs)."""


@dataclass(frozen=True)
class Step:
    """One checked step of a batch."""

    op: Op | None
    wait: WaitKind | None
    ref: str | None
    args: dict[str, Any]
    timeout_s: float
    optional: bool

    def describe(self) -> str:
        """``press [e12]`` / ``wait window 'Save As'``."""
        if self.op is not None:
            target = f" [{self.ref}]" if self.ref else ""
            extra = {k: v for k, v in self.args.items()}
            shown = " " + ", ".join(f"{k}={str(v)[:40]!r}" for k, v in extra.items()) if extra else ""
            return f"{self.op.value}{target}{shown}"
        assert self.wait is not None
        what = " ".join(f"{k}={str(v)[:40]!r}" for k, v in self.args.items())
        ref = f" [{self.ref}]" if self.ref else ""
        return f"wait {self.wait.value}{ref} {what}".rstrip()


_OP_ARGS: dict[Op, tuple[str, ...]] = {
    Op.SET_TEXT: ("text",),
    Op.SET_VALUE: ("value",),
    Op.KEY: ("keys",),
    Op.TYPE: ("text",),
}
_WAIT_ARGS: dict[WaitKind, tuple[str, ...]] = {
    WaitKind.WINDOW: ("name",),
    WaitKind.REF: (),
    WaitKind.TEXT: ("text",),
    WaitKind.QUERY: (),
    WaitKind.STABLE: (),
}
_QUERY_KEYS = ("role", "name", "text", "state")


def parse_steps(raw: Any) -> list[Step]:
    """Checks every step before any runs.

    Raises:
        StepError: Naming the first bad step and what it needs.
    """
    if not isinstance(raw, list) or not raw:
        raise StepError("steps must be a non-empty list")
    if len(raw) > MAX_STEPS:
        raise StepError(f"at most {MAX_STEPS} steps per call, got {len(raw)}")
    return [_parse_step(i, item) for i, item in enumerate(raw)]


def _parse_step(i: int, item: Any) -> Step:
    if not isinstance(item, dict):
        raise StepError(f"step {i} must be an object")
    ref = item.get("ref")
    if ref is not None:
        ref = str(ref).strip().strip("[]")
        if not REF_PATTERN.match(ref):
            raise StepError(f"step {i}: ref {item.get('ref')!r} is not a ref like 'e17'")
    timeout = item.get("timeout_s", DEFAULT_WAIT_S)
    if not isinstance(timeout, int | float) or isinstance(timeout, bool) or not 0 < timeout <= WAIT_BUDGET_S:
        raise StepError(f"step {i}: timeout_s must be a number in (0, {WAIT_BUDGET_S:g}]")
    optional = bool(item.get("optional", False))
    if ("op" in item) == ("wait" in item):
        raise StepError(
            f"step {i} needs exactly one of 'op' ({', '.join(Op)}) or 'wait' ({', '.join(WaitKind)})"
        )
    if "op" in item:
        try:
            op = Op(item["op"])
        except ValueError:
            raise StepError(f"step {i}: unknown op {item['op']!r}; ops: {', '.join(Op)}") from None
        args = _required(i, item, _OP_ARGS.get(op, ()))
        if ref is None and op not in (Op.KEY, Op.TYPE):
            raise StepError(f"step {i}: {op.value} needs a 'ref'")
        if op is Op.SET_VALUE and (
            not isinstance(args["value"], int | float) or isinstance(args["value"], bool)
        ):
            raise StepError(f"step {i}: set_value needs a number 'value'")
        if op is Op.KEY and not isinstance(args["keys"], str | list):
            raise StepError(f"step {i}: key needs 'keys' like 'ctrl+s' or ['ctrl', 's']")
        return Step(op, None, ref, args, float(timeout), optional)
    try:
        wait = WaitKind(item["wait"])
    except ValueError:
        raise StepError(f"step {i}: unknown wait {item['wait']!r}; waits: {', '.join(WaitKind)}") from None
    args = _required(i, item, _WAIT_ARGS[wait])
    if wait is WaitKind.REF and ref is None:
        raise StepError(f"step {i}: wait ref needs a 'ref'")
    if wait is WaitKind.QUERY:
        args = {k: item[k] for k in _QUERY_KEYS if item.get(k)}
        if not args:
            raise StepError(f"step {i}: wait query needs one of {', '.join(_QUERY_KEYS)}")
    if wait is WaitKind.REF and item.get("state"):
        args["state"] = str(item["state"])
    if wait is WaitKind.STABLE:
        args["ms"] = float(item.get("ms", STABLE_MS))
    if item.get("scope"):
        args["scope"] = str(item["scope"]).strip("[]")
    return Step(None, wait, ref, args, float(timeout), optional)


def _required(i: int, item: dict[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
    missing = [n for n in names if item.get(n) is None]
    if missing:
        raise StepError(
            f"step {i}: {item.get('op') or 'wait ' + str(item.get('wait'))} needs {', '.join(missing)}"
        )
    return {n: item[n] for n in names}


@dataclass
class BatchResult:
    """What a batch did: the evidence of each completed step, and where it stopped."""

    steps: list[dict[str, Any]] = field(default_factory=list)
    stopped_at: int | None = None
    error: dict[str, Any] | None = None
    windows: dict[str, list[str]] = field(default_factory=dict)
    diff: list[str] = field(default_factory=list)


class BatchRunner:
    """Runs one batch against a worker.

    Args:
        link: The worker.
        deadline_s: What is left of the caller's deadline; waits share ``min(60 s, this)``.
        clock: Monotonic seconds (tests pass their own).
    """

    def __init__(
        self, link: WorkerLink, deadline_s: float | None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.link = link
        self.clock = clock
        self.started = clock()
        total = min(WAIT_BUDGET_S, deadline_s) if deadline_s is not None else WAIT_BUDGET_S
        self.end = self.started + max(0.0, total)
        self.wait_left = max(0.0, total)
        self.generation: int | None = None  # the worker's, once the batch's first request started it
        self.app: tuple[int, int, str] | None = None  # (pid, start, window name) focused at the start

    def run(self, steps: list[Step]) -> BatchResult:
        """Runs the steps in order until one fails."""
        result = BatchResult()
        before = self._windows()
        for i, step in enumerate(steps):
            try:
                gone = self._app_gone() if step.wait is None and step.ref is None else None
                if gone is not None:  # a key or typing would go to whatever has the focus now
                    evidence = {
                        "failure": _error(DESKTOP_ERROR, f"{step.describe()}: {gone}", False, "precondition")
                    }
                else:
                    evidence = self._wait(step) if step.wait is not None else self._op(step)
            except WorkerFault as exc:
                emitted = None if exc.sent and step.op is not None else False
                result.stopped_at = i
                result.error = _error(
                    DESKTOP_ERROR, f"step {i} ({step.describe()}): {exc}", emitted, "execution"
                )
                break
            if evidence.get("failure") is not None:
                result.stopped_at = i
                result.error = evidence["failure"]
                break
            result.steps.append({"step": i, "what": step.describe(), **evidence})
        after = self._windows()
        if before is not None and after is not None:
            result.windows = window_changes(before, after)
        return result

    # --- operations -------------------------------------------------------------
    def _op(self, step: Step) -> dict[str, Any]:
        assert step.op is not None
        reply = self._request(
            {"cmd": "act", "ref": step.ref, "op": step.op.value, "args": step.args}, self._request_s()
        )
        if not reply["ok"]:
            code = str(reply.get("code"))
            message = f"{step.describe()}: {_text(reply.get('message'))}"
            if code in PRECONDITION_CODES:
                return {"failure": _error(code, message, False, "precondition")}
            return {"failure": _error("tool_error", message, None, "execution")}
        evidence = {
            k: reply.get(k) for k in ("delivery", "invoked", "state_change", "before", "after", "detail")
        }
        evidence = {k: v for k, v in evidence.items() if v is not None}
        if evidence.get("delivery") not in ("delivered", "not_delivered", "unknown"):
            evidence["delivery"] = "unknown"
        if evidence.get("detail"):  # the operation raised after the guard: its effect is unknown
            message = f"{step.describe()}: {_text(evidence['detail'])}"
            return {"failure": {**_error("tool_error", message, None, "execution"), "evidence": evidence}}
        return evidence

    # --- waits ------------------------------------------------------------------
    def _wait(self, step: Step) -> dict[str, Any]:
        assert step.wait is not None
        started = self.clock()
        allowed = min(step.timeout_s, self.wait_left, self.end - started)
        if allowed <= 0:
            return {
                "failure": _error(
                    FailureCode.WAIT_BUDGET_EXHAUSTED,
                    f"{step.describe()}: the batch's {WAIT_BUDGET_S:g} s of waiting is used up",
                    False,
                    "wait",
                )
            }
        check = self._condition(step)
        stable_since: float | None = None
        last_sig: Any = None
        met: Any = None
        gone: str | None = None
        checked = started
        while True:
            now = self.clock()
            if now - checked >= CONTINUITY_S:
                checked = now
                gone = self._app_gone()
                if gone is not None:
                    break
            value = check()
            if step.wait is WaitKind.STABLE:
                if value != last_sig or stable_since is None:
                    last_sig, stable_since = value, now
                elif (now - stable_since) * 1000 >= step.args["ms"]:
                    met = True
            else:
                met = value
            if met:
                break
            if now - started >= allowed:
                break
            time.sleep(min(POLL_S, max(0.0, allowed - (now - started))))
        spent = self.clock() - started
        self.wait_left -= spent
        if gone is not None:
            return {"failure": _error(DESKTOP_ERROR, f"{step.describe()}: {gone}", False, "wait")}
        if met:
            found = met if isinstance(met, str) else None
            return {
                "delivery": "not_delivered",
                "waited_s": round(spent, 2),
                **({"found": found} if found else {}),
            }
        exhausted = allowed < step.timeout_s
        code = FailureCode.WAIT_BUDGET_EXHAUSTED if exhausted else FailureCode.WAIT_TIMEOUT
        message = f"{step.describe()}: not met in {spent:.1f} s" + (
            f" (the batch's {WAIT_BUDGET_S:g} s of waiting is used up)" if exhausted else ""
        )
        if step.optional and not exhausted:
            return {"delivery": "not_delivered", "waited_s": round(spent, 2), "met": False}
        return {"failure": _error(code, message, False, "wait")}

    def _condition(self, step: Step) -> Callable[[], Any]:
        args = step.args
        if step.wait is WaitKind.WINDOW:
            needle = str(args["name"]).lower()

            def window() -> str | None:
                for rec in self._window_records() or []:
                    if needle in rec.name.lower():
                        return rec.ref
                return None

            return window
        if step.wait is WaitKind.REF:

            def ref_ready() -> str | None:
                reply = self._request({"cmd": "probe", "ref": step.ref}, self._request_s())
                if not reply["ok"]:
                    return None
                states = reply.get("states") or []
                wanted = args.get("state")
                return step.ref if not wanted or str(wanted).replace(" ", "_") in states else None

            return ref_ready
        if step.wait in (WaitKind.TEXT, WaitKind.QUERY):
            query = {"text": args["text"]} if step.wait is WaitKind.TEXT else dict(args)
            query.pop("scope", None)

            def found() -> str | None:
                reply = self._request(
                    {"cmd": "find", "scope": args.get("scope"), "query": query, "limit": 1}, self._request_s()
                )
                records = _records(reply.get("records")) if reply["ok"] else []
                return records[0].ref if records else None

            return found

        def signature() -> Any:
            reply = self._request({"cmd": "observe", "scope": args.get("scope")}, self._request_s())
            if not reply["ok"]:
                return None
            return tuple(
                (r.ref, r.name, r.text, tuple(r.states), tuple(r.bounds))
                for r in _records(reply.get("records"))
            )

        return signature

    # --- windows ----------------------------------------------------------------
    def _window_records(self) -> list[Record] | None:
        reply = self._request({"cmd": "windows"}, self._request_s())
        if not reply["ok"]:
            return None
        records = _records(reply.get("records"))
        if self.app is None:  # the first listing: the batch keeps to the focused window's application
            focused = next((r for r in records if r.ref == reply.get("focused")), None)
            self.app = None if focused is None else (focused.pid, focused.start, focused.name)
        return records

    def _windows(self) -> dict[str, Record] | None:
        try:
            records = self._window_records()
        except WorkerFault:
            return None
        return None if records is None else {r.ref: r for r in records}

    def _app_gone(self) -> str | None:
        """Why the batch's application is gone (no window of its process left), None while it is not."""
        if self.app is None:
            return None
        records = self._window_records()
        pid, start, name = self.app
        if records is None or any(r.pid == pid and r.start == start for r in records):
            return None
        return f"the application of {name[:80]!r} (pid {pid}) has no window left: it exited or was closed"

    def _request(self, payload: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        """One request to the worker this batch started with; a worker that died since fails it."""
        reply = self.link.request(payload, timeout_s, generation=self.generation)
        self.generation = self.link.generation
        return reply

    def _request_s(self) -> float:
        return max(1.0, min(REQUEST_S, self.end - self.clock() + 5.0))


def window_changes(before: dict[str, Record], after: dict[str, Record]) -> dict[str, list[str]]:
    """Windows opened, closed, activated and moved between two listings, by ref."""

    def label(rec: Record) -> str:
        return f"{rec.role} {rec.name[:60]!r} [{rec.ref}]"

    changes: dict[str, list[str]] = {
        "opened": [label(r) for ref, r in after.items() if ref not in before],
        "closed": [label(r) for ref, r in before.items() if ref not in after],
        "activated": [  # a window opened active counts: the model must know where input now goes
            label(r)
            for ref, r in after.items()
            if "active" in r.states and (ref not in before or "active" not in before[ref].states)
        ],
        "moved": [label(r) for ref, r in after.items() if ref in before and before[ref].bounds != r.bounds],
    }
    return {k: v for k, v in changes.items() if v}


def _records(raw: Any) -> list[Record]:
    try:
        return parse_records(raw or [])
    except (UntrustedAnswer, ValueError):
        return []


def _text(value: Any) -> str:
    return str(value)[:500] if value is not None else ""


def _error(code: str, message: str, emitted: bool | None, phase: str) -> dict[str, Any]:
    return {"code": str(code), "message": message, "failure_phase": phase, "input_events_emitted": emitted}
