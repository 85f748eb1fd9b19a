"""The typed model of an OSWorld task JSON, normalised into one shape at load.

OSWorld's evaluator block is "a name or a list of names" with parallel
"a dict or a list" getters and options; :func:`task_from_dict` turns every
variant into :class:`Evaluator` with a tuple of :class:`Check` and an explicit
:class:`Conj`, so the code that runs a task has one path. ``"infeasible"`` becomes
``Evaluator.infeasible = True`` with no checks. Dirty keys of the real data
(``"sou  rce"``) are matched with their whitespace removed; keys this model does
not know are kept in ``Task.extra`` and written back by :meth:`Task.to_dict`.
"""

from __future__ import annotations

import copy
import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from osworld_mcp_env.errors import TaskError

INFEASIBLE = "infeasible"

_KNOWN_KEYS = (
    "id",
    "snapshot",
    "instruction",
    "source",
    "config",
    "trajectory",
    "related_apps",
    "evaluator",
    "proxy",
    "fixed_ip",
    "possibility_of_env_change",
    "hint",
)


class Conj(enum.StrEnum):
    """How the scores of several checks combine (OSWorld's ``conj``)."""

    AND = "and"
    OR = "or"


@dataclass(frozen=True)
class SetupStep:
    """One setup (or postconfig) step: ``{"type": ..., "parameters": {...}}``."""

    type: str
    parameters: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Returns the OSWorld JSON form."""
        return {"type": self.type, "parameters": copy.deepcopy(dict(self.parameters))}


@dataclass(frozen=True)
class GetterSpec:
    """A getter config: ``type`` plus the rest of its keys (``path``, ``dest``, ``rules``, ...)."""

    type: str
    config: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Returns the OSWorld JSON form (``type`` first)."""
        return {"type": self.type, **copy.deepcopy(dict(self.config))}


@dataclass(frozen=True)
class Check:
    """One metric applied to a result (and an optional expected) getter."""

    func: str
    result: GetterSpec | None = None
    expected: GetterSpec | None = None
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Evaluator:
    """The normalised ``evaluator`` block.

    Attributes:
        checks: The metrics to run, in order (empty when ``infeasible``).
        conj: How check scores combine.
        postconfig: Setup steps run before the getters (for example: focus, ctrl+s).
        infeasible: True when the task is infeasible by design: the agent scores 1
            exactly when it declares the task infeasible (OSWorld's ``FAIL``).
    """

    checks: tuple[Check, ...] = ()
    conj: Conj = Conj.AND
    postconfig: tuple[SetupStep, ...] = ()
    infeasible: bool = False

    def to_dict(self) -> dict[str, Any]:
        """Returns the OSWorld JSON form (a scalar ``func`` for one check, lists for several)."""
        out: dict[str, Any] = {}
        if self.postconfig:
            out["postconfig"] = [s.to_dict() for s in self.postconfig]
        if self.infeasible:
            out["func"] = INFEASIBLE
            return out
        if len(self.checks) == 1:
            (c,) = self.checks
            out["func"] = c.func
            if c.result is not None:
                out["result"] = c.result.to_dict()
            if c.expected is not None:
                out["expected"] = c.expected.to_dict()
            if c.options:
                out["options"] = copy.deepcopy(dict(c.options))
            return out
        out["func"] = [c.func for c in self.checks]
        out["conj"] = self.conj.value
        out["result"] = [c.result.to_dict() if c.result else None for c in self.checks]
        if any(c.expected is not None for c in self.checks):
            out["expected"] = [c.expected.to_dict() if c.expected else None for c in self.checks]
        if any(c.options for c in self.checks):
            out["options"] = [copy.deepcopy(dict(c.options)) for c in self.checks]
        return out


@dataclass(frozen=True)
class Task:
    """One OSWorld task, typed.

    Attributes:
        id: The task id (a UUID for OSWorld tasks, a slug for bundled ones).
        instruction: What the agent is asked to do.
        config: Setup steps, run in order at reset.
        evaluator: The normalised evaluator.
        snapshot: OSWorld's snapshot label (informational).
        source: Where the task came from.
        related_apps: The apps the task involves, as written in the JSON.
        proxy: Whether OSWorld runs this task behind its proxy.
        fixed_ip: Whether the task needs a fixed IP (the Google Drive tasks).
        possibility_of_env_change: ``low`` / ``medium`` / ``high``.
        hint: Optional free text.
        trajectory: OSWorld's unused trajectory path.
        extra: Keys of the JSON this model does not know, kept verbatim.
        origin: The file the task was read from, if any.
        unsupported: Why this task cannot run here (unknown step/getter/metric names);
            empty for a runnable task. Only a lenient load returns such a task.
    """

    id: str
    instruction: str
    config: tuple[SetupStep, ...]
    evaluator: Evaluator
    snapshot: str = ""
    source: str = ""
    related_apps: tuple[str, ...] = ()
    proxy: bool = False
    fixed_ip: bool = False
    possibility_of_env_change: str = "low"
    hint: str | None = None
    trajectory: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    origin: Path | None = field(default=None, compare=False)
    unsupported: tuple[str, ...] = field(default=(), compare=False)

    @property
    def supported(self) -> bool:
        """True when every name the task uses is registered here."""
        return not self.unsupported

    @property
    def domain(self) -> str:
        """The OSWorld domain: the folder the task file lies in, else the snapshot label."""
        if self.origin is not None and self.origin.parent.name not in ("", "bundled"):
            return self.origin.parent.name
        return self.snapshot

    def to_dict(self) -> dict[str, Any]:
        """Returns the OSWorld JSON form; ``task_from_dict(t.to_dict()) == t``."""
        out: dict[str, Any] = {
            "id": self.id,
            "snapshot": self.snapshot,
            "instruction": self.instruction,
            "source": self.source,
            "config": [s.to_dict() for s in self.config],
            "related_apps": list(self.related_apps),
            "evaluator": self.evaluator.to_dict(),
            "proxy": self.proxy,
            "fixed_ip": self.fixed_ip,
            "possibility_of_env_change": self.possibility_of_env_change,
        }
        if self.trajectory is not None:
            out["trajectory"] = self.trajectory
        if self.hint is not None:
            out["hint"] = self.hint
        out.update(copy.deepcopy(dict(self.extra)))
        return out


def task_from_dict(raw: Mapping[str, Any], *, origin: Path | None = None) -> Task:
    """Builds a :class:`Task` from OSWorld JSON, normalising its variants.

    This checks the *shape* only; names are checked against the registries by
    :func:`osworld_mcp_env.tasks.loader.validate_task`.

    Raises:
        TaskError: A required field is missing or has the wrong type; the message
            names the task and the field.
    """
    if not isinstance(raw, Mapping):
        raise TaskError(f"A task must be a JSON object, got {type(raw).__name__}.")
    data: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for key, value in raw.items():
        clean = re.sub(r"\s+", "", str(key))
        if clean in _KNOWN_KEYS:
            data[clean] = value
        else:
            extra[key] = copy.deepcopy(value)
    where = f"task {data.get('id', '<no id>')!r}" + (f" ({origin})" if origin else "")
    task_id = _require(data, "id", str, where)
    instruction = _require(data, "instruction", str, where)
    related = data.get("related_apps", [])
    if isinstance(related, str):
        related = [related]
    return Task(
        id=task_id,
        instruction=instruction,
        config=_steps(data.get("config") or [], f"{where}: config", where),
        evaluator=_evaluator(data.get("evaluator"), where),
        snapshot=str(data.get("snapshot", "")),
        source=str(data.get("source", "")),
        related_apps=tuple(str(a) for a in related),
        proxy=_boolish(data.get("proxy", False)),
        fixed_ip=_boolish(data.get("fixed_ip", False)),
        possibility_of_env_change=str(data.get("possibility_of_env_change", "low")),
        hint=None if data.get("hint") is None else str(data["hint"]),
        trajectory=None if data.get("trajectory") is None else str(data["trajectory"]),
        extra=extra,
        origin=origin,
    )


def _require(data: Mapping[str, Any], key: str, kind: type, where: str) -> Any:
    if key not in data:
        raise TaskError(f"{where}: missing required field {key!r}.")
    value = data[key]
    if not isinstance(value, kind):
        raise TaskError(f"{where}: field {key!r} must be {kind.__name__}, got {type(value).__name__}.")
    return value


def _boolish(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes")
    return bool(value)


def _steps(raw: Any, what: str, where: str) -> tuple[SetupStep, ...]:
    if not isinstance(raw, list):
        raise TaskError(f"{what} must be a list of steps, got {type(raw).__name__}.")
    steps = []
    for i, step in enumerate(raw):
        if not isinstance(step, Mapping) or not isinstance(step.get("type"), str):
            raise TaskError(f"{what}[{i}] must be an object with a string 'type', got {step!r}.")
        params = step.get("parameters") or {}
        if not isinstance(params, Mapping):
            raise TaskError(f"{what}[{i}] ({step['type']}): 'parameters' must be an object.")
        steps.append(SetupStep(type=step["type"], parameters=copy.deepcopy(dict(params))))
    return tuple(steps)


def _getter(raw: Any, what: str) -> GetterSpec | None:
    if raw is None or raw == {}:
        return None
    if not isinstance(raw, Mapping) or not isinstance(raw.get("type"), str):
        raise TaskError(f"{what} must be an object with a string 'type', got {raw!r}.")
    config = {k: copy.deepcopy(v) for k, v in raw.items() if k != "type"}
    return GetterSpec(type=raw["type"], config=config)


def _evaluator(raw: Any, where: str) -> Evaluator:
    if not isinstance(raw, Mapping) or "func" not in raw:
        raise TaskError(f"{where}: 'evaluator' must be an object with a 'func'.")
    postconfig = _steps(raw.get("postconfig") or [], f"{where}: evaluator.postconfig", where)
    func = raw["func"]
    conj_raw = raw.get("conj", "and")
    try:
        conj = Conj(str(conj_raw).lower())
    except ValueError:
        raise TaskError(f"{where}: evaluator.conj must be 'and' or 'or', got {conj_raw!r}.") from None
    if func == INFEASIBLE:
        return Evaluator(checks=(), conj=conj, postconfig=postconfig, infeasible=True)
    if isinstance(func, str):
        options = raw.get("options") or {}
        if not isinstance(options, Mapping):
            raise TaskError(f"{where}: evaluator.options must be an object for one func.")
        check = Check(
            func=func,
            result=_getter(raw.get("result"), f"{where}: evaluator.result"),
            expected=_getter(raw.get("expected"), f"{where}: evaluator.expected"),
            options=copy.deepcopy(dict(options)),
        )
        return Evaluator(checks=(check,), conj=conj, postconfig=postconfig)
    if not isinstance(func, list) or not func or not all(isinstance(f, str) for f in func):
        raise TaskError(f"{where}: evaluator.func must be a name or a non-empty list of names, got {func!r}.")
    if INFEASIBLE in func:
        raise TaskError(f"{where}: 'infeasible' cannot be combined with other funcs.")
    n = len(func)
    results = _parallel(raw.get("result"), n, "result", where)
    expected = _parallel(raw.get("expected"), n, "expected", where)
    options = _parallel(raw.get("options"), n, "options", where)
    checks = []
    for i, name in enumerate(func):
        opts = options[i] or {}
        if not isinstance(opts, Mapping):
            raise TaskError(f"{where}: evaluator.options[{i}] must be an object or null.")
        checks.append(
            Check(
                func=name,
                result=_getter(results[i], f"{where}: evaluator.result[{i}]"),
                expected=_getter(expected[i], f"{where}: evaluator.expected[{i}]"),
                options=copy.deepcopy(dict(opts)),
            )
        )
    return Evaluator(checks=tuple(checks), conj=conj, postconfig=postconfig)


def _parallel(raw: Any, n: int, key: str, where: str) -> list[Any]:
    if raw is None:
        return [None] * n
    if not isinstance(raw, list) or len(raw) != n:
        raise TaskError(
            f"{where}: with {n} funcs, evaluator.{key} must be a list of {n} entries (null allowed), "
            f"got {raw!r:.200}."
        )
    return raw
