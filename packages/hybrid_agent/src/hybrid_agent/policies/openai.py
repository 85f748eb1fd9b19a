"""``openai:URL#MODEL``: any OpenAI-compatible chat-completions server (vLLM, SGLang, ...).

Two tool formats:

* ``text`` (default): the context already holds the ``<tools>`` block and the
  ``<tool_call>`` instructions (Qwen's format); the request stops at
  ``</tool_call>``, which servers leave out of the text, so it is put back.
* ``functions``: the tools go in the request's ``tools`` field. OpenAI function names
  must match ``^[a-zA-Z0-9_-]{1,64}$``, so ``libreoffice_calc.save`` is sent as
  ``libreoffice_calc__save``; :class:`NameMap` keeps the mapping per request and
  maps the answer back, so the rest of the stack sees the real names.

Transient failures (connection refused, timeouts, HTTP 429 and 5xx) are retried
with exponential backoff; after the last retry the :class:`Generation` carries
``error`` and the runner ends the episode as an error (never a crash, never a 0).
Standard library only (``urllib``), so the policy adds no dependency.
"""

from __future__ import annotations

import contextlib
import json
import re
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from hybrid_agent.errors import ConfigError
from hybrid_agent.messages import to_openai
from hybrid_agent.policies.base import Generation, PolicyOptions, PolicyRequest, register_policy
from hybrid_agent.prompt import computer_use_function
from hybrid_agent.toolset import ToolSpec

STOP = "</tool_call>"
_VALID = re.compile(r"[^a-zA-Z0-9_-]")
_RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}


class NameMap:
    """A reversible map between tool names and OpenAI-valid function names."""

    def __init__(self, names: Sequence[str]) -> None:
        """Maps each name; collisions after sanitising get a numeric suffix."""
        self.to_wire: dict[str, str] = {}
        self.from_wire: dict[str, str] = {}
        for name in names:
            base = _VALID.sub("_", name.replace(".", "__"))[:60] or "tool"
            wire, n = base, 1
            while wire in self.from_wire:
                n += 1
                wire = f"{base}_{n}"
            self.to_wire[name], self.from_wire[wire] = wire, name

    def original(self, wire: str) -> str:
        """The real name of a wire name (unknown wire names pass through unchanged)."""
        return self.from_wire.get(wire, wire)


class OpenAIPolicy:
    """Chat-completions client for one server and model."""

    def __init__(self, base_url: str, model: str, options: PolicyOptions | None = None) -> None:
        """Args: base_url (``http://host:8000`` or ``.../v1``), model name, options."""
        self.options = options or PolicyOptions()
        url = base_url.rstrip("/")
        self.url = url + ("/chat/completions" if url.endswith("/v1") else "/v1/chat/completions")
        self.model = model
        self.name = f"openai:{model}"
        # In function-calling mode the tools travel in the request, not in the system text.
        self.tools_in_request = self.options.tool_format == "functions"
        self._pool = ThreadPoolExecutor(self.options.concurrency, thread_name_prefix="openai")

    def generate(self, requests: Sequence[PolicyRequest]) -> list[Generation]:
        """Sends the requests concurrently; answers in order."""
        return list(self._pool.map(self._one, requests))

    def close(self) -> None:
        """Stops the request threads."""
        self._pool.shutdown(wait=False)

    # --- one request ---------------------------------------------------------------
    def _payload(self, request: PolicyRequest) -> tuple[dict[str, Any], NameMap | None]:
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": to_openai(request.messages),
            "temperature": self.options.temperature,
            "max_tokens": self.options.max_tokens,
        }
        if self.options.tool_format == "text":
            payload["stop"] = [STOP]
            return payload, None
        names = NameMap(["computer_use", *(t.qualified_name for t in request.tools)])
        payload["tools"] = [_wire_function(f, names) for f in _functions(request.tools)]
        return payload, names

    def _one(self, request: PolicyRequest) -> Generation:
        payload, names = self._payload(request)
        body = json.dumps(payload).encode()
        started = time.perf_counter()
        delay, last_error = self.options.backoff_s, ""
        for attempt in range(self.options.retries + 1):
            if attempt:
                time.sleep(delay)
                delay *= 2
            try:
                answer = self._post(body)
            except urllib.error.HTTPError as exc:
                last_error = f"HTTP {exc.code}: {exc.read()[:300].decode(errors='replace')}"
                if exc.code not in _RETRY_STATUS:
                    break
                continue
            except (urllib.error.URLError, TimeoutError, ConnectionError, json.JSONDecodeError) as exc:
                last_error = f"{type(exc).__name__}: {exc}"
                continue
            try:
                return self._generation(answer, names, time.perf_counter() - started)
            except (KeyError, IndexError, TypeError) as exc:
                last_error = f"malformed response ({type(exc).__name__}: {exc}): {str(answer)[:300]}"
                break
        return Generation(text="", latency_s=time.perf_counter() - started, error=f"{self.url}: {last_error}")

    def _post(self, body: bytes) -> dict[str, Any]:
        req = urllib.request.Request(self.url, data=body, headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=self.options.timeout_s) as response:
            return json.loads(response.read())

    def _generation(self, answer: dict[str, Any], names: NameMap | None, latency: float) -> Generation:
        choice = answer["choices"][0]
        message = choice["message"]
        text = message.get("content") or ""
        if names is None:
            if choice.get("finish_reason") == "stop" and "<tool_call>" in text and STOP not in text:
                text += STOP
        else:
            text += "".join(_call_text(call, names) for call in message.get("tool_calls") or [])
        usage = answer.get("usage") or {}
        return Generation(text, usage.get("prompt_tokens"), usage.get("completion_tokens"), latency)


def _functions(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    # Same resolution the text prompt states (Qwen3-VL's relative grid).
    return [computer_use_function((1000, 1000)), *(t.to_function() for t in tools)]


def _wire_function(function: dict[str, Any], names: NameMap) -> dict[str, Any]:
    inner = dict(function["function"])
    inner["name"] = names.to_wire[inner["name"]]
    return {"type": "function", "function": inner}


def _call_text(call: dict[str, Any], names: NameMap) -> str:
    function = call.get("function") or {}
    arguments = function.get("arguments", "{}")
    with contextlib.suppress(json.JSONDecodeError):  # else the parser reports the string as invalid JSON
        arguments = json.loads(arguments) if isinstance(arguments, str) else arguments
    body = json.dumps({"name": names.original(function.get("name", "")), "arguments": arguments})
    return f"\n<tool_call>\n{body}\n</tool_call>"


@register_policy("openai")
def _openai(rest: str, options: PolicyOptions) -> OpenAIPolicy:
    url, sep, model = rest.rpartition("#")
    if not sep or not url or not model:
        raise ConfigError(f"openai policy spec must be 'openai:URL#MODEL', got 'openai:{rest}'.")
    return OpenAIPolicy(url, model, options)
