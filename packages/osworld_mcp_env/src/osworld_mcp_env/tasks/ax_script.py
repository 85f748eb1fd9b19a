"""Scripted solutions through the semantic channel: ``ax.find`` binds a name to a ref, ``ax.act`` cites it.

Refs exist only at run time (the worker binds them while it walks), so a scripted ``ax``
oracle cannot hold them. It holds names instead: an ``ax.find`` call carries ``"bind":
"<name>"``, and the first ref its result shows is bound to that name; a later ``ax.act``
step writes ``"ref": "$<name>"``. :class:`RefBindings` plays that part for a scripted
policy or a test, reading refs out of the result text as a model would.
"""

from __future__ import annotations

import re
from typing import Any

from osworld_mcp_env.errors import TaskError

Call = dict[str, Any]
BIND_KEY = "bind"
PLACEHOLDER = "$"
_REF_IN_TEXT = re.compile(r"\[(e[1-9][0-9]{0,8})\]")


class UnboundRef(TaskError):
    """A step cites a name no earlier ``ax.find`` bound (its result showed no ref)."""


def find(bind: str, **query: Any) -> Call:
    """An ``ax.find`` call whose first match is bound to ``bind`` (``$bind`` in later steps)."""
    return {"name": "ax.find", "arguments": {**query, "limit": 1}, BIND_KEY: bind}


def act(*steps: dict[str, Any]) -> Call:
    """One ``ax.act`` call running ``steps`` in order."""
    return {"name": "ax.act", "arguments": {"steps": list(steps)}}


def op(name: str, ref: str | None = None, **arguments: Any) -> dict[str, Any]:
    """One operation step; ``ref`` is a bound name (``"target"``, written ``$target``)."""
    return {"op": name, **({"ref": PLACEHOLDER + ref} if ref is not None else {}), **arguments}


def first_ref(tool_result: str) -> str | None:
    """The first ref (``e17``) a tool result shows, None when it shows none (an error, no match)."""
    match = _REF_IN_TEXT.search(tool_result)
    return match.group(1) if match else None


class RefBindings:
    """The refs one episode's ``ax.find`` calls bound, by name."""

    def __init__(self) -> None:
        self.refs: dict[str, str] = {}

    def record(self, call: Call, tool_result: str) -> None:
        """Binds ``call``'s name (if it has one) to the first ref of its result."""
        name = call.get(BIND_KEY)
        if name is None:
            return
        ref = first_ref(tool_result)
        if ref is None:
            self.refs.pop(name, None)
        else:
            self.refs[name] = ref

    def resolve(self, call: Call) -> Call:
        """``call`` as the env takes it: no ``bind`` key, every ``$name`` replaced by its ref.

        Raises:
            UnboundRef: A step cites a name that is not bound.
        """
        arguments = dict(call["arguments"])
        if isinstance(arguments.get("steps"), list):
            arguments["steps"] = [self._step(step) for step in arguments["steps"]]
        return {"name": call["name"], "arguments": arguments}

    def _step(self, step: Any) -> Any:
        ref = step.get("ref") if isinstance(step, dict) else None
        if not isinstance(ref, str) or not ref.startswith(PLACEHOLDER):
            return step
        name = ref[len(PLACEHOLDER) :]
        if name not in self.refs:
            raise UnboundRef(f"the step cites ${name}, which no ax.find bound to a ref")
        return {**step, "ref": self.refs[name]}
