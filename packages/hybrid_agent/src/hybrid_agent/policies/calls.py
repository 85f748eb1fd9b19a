"""Calls between the stack's text form and a provider's native tool calling.

The context builder writes every past call as ``<tool_call>`` text in the assistant
turn and the call's result at the head of the next user turn. Policies whose API takes
tools apart (OpenAI function calling, the Responses API, the Anthropic Messages API)
read those turns back into native calls and results with :func:`split_call` and
:func:`take_result`, send tool names the API accepts through :class:`NameMap`, and
write the native calls of an answer back as ``<tool_call>`` text (:func:`call_block`)
for the parser.
"""

from __future__ import annotations

import json
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from hybrid_agent.messages import Message
from hybrid_agent.policies.base import PolicyRequest
from hybrid_agent.prompt import render_tool_result
from hybrid_agent.trajectory import Call

NO_RESULT = "(no text result)"
"""The result text of a replayed call that relayed no text (GUI actions)."""

_VALID = re.compile(r"[^a-zA-Z0-9_-]")
_CALL = re.compile(r"<tool_call>(.*?)(</tool_call>|$)", re.DOTALL)
_RESULT_PREFIX = render_tool_result("", 0)


class NameMap:
    """A reversible map between tool names and API-valid function names (``^[a-zA-Z0-9_-]{1,64}$``)."""

    def __init__(self, names: Sequence[str]) -> None:
        """Maps each distinct name; collisions after sanitising get a numeric suffix."""
        self.to_wire: dict[str, str] = {}
        self.from_wire: dict[str, str] = {}
        for name in dict.fromkeys(names):
            base = _VALID.sub("_", name.replace(".", "__"))[:60] or "tool"
            wire, n = base, 1
            while wire in self.from_wire:
                n += 1
                wire = f"{base}_{n}"
            self.to_wire[name], self.from_wire[wire] = wire, name

    def wire(self, name: str) -> str:
        """The wire name of a real name (unknown names pass through unchanged)."""
        return self.to_wire.get(name, name)

    def original(self, wire: str) -> str:
        """The real name of a wire name (unknown wire names pass through unchanged)."""
        return self.from_wire.get(wire, wire)


def decode_arguments(raw: Any) -> Any:
    """Decoded call arguments; a string that is not JSON stays a string for the parser to report."""
    if not isinstance(raw, str):
        return raw
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw


def call_block(name: str, arguments: Any) -> str:
    """One call as the ``<tool_call>`` text the parser reads."""
    body = json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)
    return f"<tool_call>\n{body}\n</tool_call>"


def split_call(message: Message) -> tuple[str, str, dict[str, Any]] | None:
    """``(text before, name, arguments)`` of a past assistant turn's ``<tool_call>``, else ``None``."""
    content = message["content"]
    if message["role"] != "assistant" or not isinstance(content, str):
        return None
    match = _CALL.search(content)
    if match is None or not match.group(2):
        return None
    try:
        call = json.loads(match.group(1))
    except json.JSONDecodeError:
        return None
    if not isinstance(call, dict) or not isinstance(call.get("name"), str):
        return None
    arguments = call.get("arguments", {})
    return content[: match.start()].rstrip(), call["name"], arguments if isinstance(arguments, dict) else {}


def take_result(content: Any) -> tuple[str, Any]:
    """Splits a user turn into its leading ``Tool result:`` text and the rest (the screenshot ...)."""
    if isinstance(content, list) and content:
        first = content[0]
        if first.get("type") == "text" and first["text"].startswith(_RESULT_PREFIX):
            return first["text"], content[1:]
    return NO_RESULT, content


def map_calls(text: str, rewrite: Callable[[dict[str, Any]], dict[str, Any] | None]) -> str:
    """Rewrites each ``<tool_call>`` JSON object of ``text`` (``rewrite`` returns ``None`` to keep one).

    A block that is not a JSON object stays as written, for the parser to report.
    """

    def one(match: re.Match[str]) -> str:
        try:
            call = json.loads(match.group(1))
        except json.JSONDecodeError:
            return match.group(0)
        new = rewrite(call) if isinstance(call, dict) else None
        if new is None:
            return match.group(0)
        return f"<tool_call>\n{json.dumps(new, ensure_ascii=False)}\n{match.group(2)}"

    return _CALL.sub(one, text)


def map_content_calls(text: str, names: NameMap) -> str:
    """Renames wire names in ``<tool_call>`` blocks a server without a tool parser left in the text."""

    def rename(call: dict[str, Any]) -> dict[str, Any] | None:
        if call.get("name") not in names.from_wire:
            return None
        return {**call, "name": names.original(call["name"])}

    return map_calls(text, rename)


class IssuedCalls:
    """What the provider answered behind each call a policy emitted, per episode, for exact replay.

    The context shows a past call as canonical ``<tool_call>`` text, but a provider API
    wants the assistant turn back as the model wrote it: its tool-use ids, its own action
    vocabulary and display coordinates, its reasoning items. The policy records the
    answer's items under the call it emitted; a past turn whose call is found again (in
    order, so a repeated call finds its own entry) is replayed from them, any other (a
    resumed run, another policy's history) is sent as plain assistant text.
    """

    def __init__(self, max_episodes: int = 256) -> None:
        """Starts with no episodes; keeps the ``max_episodes`` most recently answered ones.

        Episodes run a few at a time (one per env), so the bound only drops finished
        ones and keeps a long suite from holding every answer it ever got.
        """
        self.max_episodes = max_episodes
        self._episodes: OrderedDict[tuple[str, int], list[tuple[str, Any]]] = OrderedDict()
        self._lock = threading.Lock()

    def add(self, request: PolicyRequest, call: Call, items: Any) -> None:
        """Records the provider items behind ``call``, the answer to ``request``."""
        key = (request.task_id, request.run)
        with self._lock:
            if request.step == 0:  # a new episode (or a rerun) of this task and run
                self._episodes.pop(key, None)
            self._episodes.setdefault(key, []).append((call.to_json(), items))
            self._episodes.move_to_end(key)
            while len(self._episodes) > self.max_episodes:
                self._episodes.popitem(last=False)

    def replay(self, request: PolicyRequest, messages: Sequence[Message]) -> list[Any | None]:
        """For each message: the recorded items of its call (assistant turns found), else ``None``."""
        with self._lock:
            issued = [] if request.step == 0 else list(self._episodes.get((request.task_id, request.run), []))
        found: list[Any | None] = []
        start = 0
        for message in messages:
            split = split_call(message)
            items = None
            if split is not None:
                key = Call(split[1], split[2]).to_json()
                index = next((i for i in range(start, len(issued)) if issued[i][0] == key), None)
                if index is not None:
                    items, start = issued[index][1], index + 1
            found.append(items)
        return found
