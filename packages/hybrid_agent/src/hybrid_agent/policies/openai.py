"""``openai:URL#MODEL``: any OpenAI-compatible chat-completions server (vLLM, SGLang, OpenAI).

Requests go through the official ``openai`` client (the ``hybrid-agent[openai]`` extra,
imported only when the policy is built).

Auth: the API key is read from the variable named by ``PolicyOptions.api_key_env``
(``OPENAI_API_KEY`` by default) when the policy is built and sent as
``Authorization: Bearer``. When the variable is unset a placeholder key is sent, which a
server without a key (vLLM without ``--api-key``) accepts; a 401/403 answer then ends as
an ``auth`` error naming the variable.

Failures are values, never exceptions out of :meth:`OpenAIPolicy.generate`: the
:class:`Generation` carries ``error`` and an ``error_code``
(:class:`~hybrid_agent.policies.base.GenerationErrorCode`) and the runner ends the
episode as an error, never a 0. The client retries connection errors, timeouts, 408,
409, 429 and 5xx ``PolicyOptions.retries`` times, honouring ``Retry-After``; otherwise
its own backoff (0.5 s doubling, at most 8 s) applies, so ``backoff_s`` is not used
here. Not retried: 401/403 (``auth``), a prompt longer than the model's context
(``context_length``), any other 4xx (``http_error``). A body torn mid-way or a refused
connection ends as ``transport``, an answer that is no completion as ``malformed_response``.

Two tool formats:

* ``text`` (default): the context already holds the ``<tools>`` block and the
  ``<tool_call>`` instructions (Qwen's format); the request stops at
  ``</tool_call>``, which servers leave out of the text, so it is put back.
* ``functions``: the tools go in the request's ``tools`` field with
  ``tool_choice="auto"``. OpenAI function names must match ``^[a-zA-Z0-9_-]{1,64}$``,
  so ``libreoffice_calc.save`` is sent as ``libreoffice_calc__save``; :class:`NameMap`
  keeps the mapping per request. Past assistant turns are replayed as ``tool_calls``
  under their wire names, each followed by a ``tool`` message holding the call's
  ``Tool result:`` text (moved out of the next user turn, which keeps the screenshot)
  or ``(no text result)`` for a GUI action. The answer's calls come back as
  ``<tool_call>`` text under the real names, also when a server without a tool
  parser leaves them in ``content`` under their wire names. vLLM needs
  ``--enable-auto-tool-choice --tool-call-parser hermes`` (Qwen) for this mode.

A server with a reasoning parser (vLLM ``--reasoning-parser``) returns the thinking
apart from the content; it goes to ``Generation.reasoning``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from hybrid_agent.errors import ConfigError
from hybrid_agent.messages import Message, to_openai
from hybrid_agent.policies.base import (
    Generation,
    PolicyOptions,
    PolicyRequest,
    register_policy,
)
from hybrid_agent.policies.calls import (
    NO_RESULT,
    NameMap,
    call_block,
    decode_arguments,
    map_content_calls,
    split_call,
    take_result,
)
from hybrid_agent.policies.provider import (
    PLACEHOLDER_KEY,
    ApiKey,
    RequestPool,
    describe_failure,
    failure,
    load_sdk,
    malformed,
)
from hybrid_agent.prompt import computer_use_function
from hybrid_agent.toolset import ToolSpec

if TYPE_CHECKING:
    import openai

__all__ = ["NO_RESULT", "PLACEHOLDER_KEY", "STOP", "NameMap", "OpenAIPolicy"]

STOP = "</tool_call>"
DEFAULT_KEY_ENV = "OPENAI_API_KEY"


class OpenAIPolicy(RequestPool):
    """Chat-completions client for one server and model.

    Attributes:
        url: The API base the client talks to (ends in ``/v1``).
        tools_in_request: The tools travel in the request (``functions``), not in the system text.
        concurrent: Each env's request is sent as it comes (the server batches), never held for others.
    """

    def __init__(self, base_url: str, model: str, options: PolicyOptions | None = None) -> None:
        """Builds the client.

        Args:
            base_url: ``http://host:8000`` or ``http://host:8000/v1``.
            model: The served model name.
            options: Sampling, auth, timeout, retry and tool-format settings.

        Raises:
            ConfigError: The ``openai`` package is not installed, or ``extra_body`` is not an object.
        """
        self.options = options or PolicyOptions()
        if not isinstance(self.options.extra_body, dict):
            raise ConfigError(f"extra_body must be a JSON object, got {self.options.extra_body!r}.")
        self._sdk = load_sdk("openai", "openai")
        url = base_url.rstrip("/")
        self.url = url if url.endswith("/v1") else url + "/v1"
        self.model = model
        self.name = f"openai:{model}"
        self.tools_in_request = self.options.tool_format == "functions"
        self._key = ApiKey.read(self.options.api_key_env or DEFAULT_KEY_ENV)
        self._client: openai.OpenAI = self._sdk.OpenAI(
            base_url=self.url,
            api_key=self._key.value,
            timeout=self.options.timeout_s,
            max_retries=self.options.retries,
        )
        self._start_pool(self.options.concurrency, "openai")

    def _one(self, request: PolicyRequest) -> Generation:
        kwargs, names = self._request(request)
        started = time.perf_counter()
        try:
            completion = self._client.chat.completions.create(**kwargs)
        except (self._sdk.APIError, ValueError) as exc:  # ValueError: a body that is not JSON
            return failure(self.url, *describe_failure(self._sdk, exc, self._key), started)
        try:
            return _generation(completion, names, time.perf_counter() - started, STOP in request.stop)
        except (AttributeError, IndexError, TypeError) as exc:  # the client does not validate answers
            return malformed(self.url, completion, exc, started)

    def _request(self, request: PolicyRequest) -> tuple[dict[str, Any], NameMap | None]:
        kwargs = {"model": self.model, **_sampling(self.options)}
        messages = to_openai(request.messages)
        if self.options.tool_format == "text":
            return {
                **kwargs,
                "messages": messages,
                **({"stop": list(request.stop)} if request.stop else {}),
            }, None
        past = [call[1] for call in map(split_call, messages) if call is not None]
        names = NameMap(["computer_use", *(t.qualified_name for t in request.tools), *past])
        return {
            **kwargs,
            "messages": _replay_calls(messages, names),
            "tools": [_wire_function(f, names) for f in request.functions or _functions(request.tools)],
            "tool_choice": "auto",
        }, names


def _sampling(options: PolicyOptions) -> dict[str, Any]:
    """The sampling fields of a request; vLLM/SGLang-only fields travel in ``extra_body``."""
    kwargs: dict[str, Any] = {"temperature": options.temperature, "max_tokens": options.max_tokens}
    if options.top_p is not None:
        kwargs["top_p"] = options.top_p
    if options.seed is not None:
        kwargs["seed"] = options.seed
    extra = dict(options.extra_body)
    if options.repetition_penalty is not None:
        extra["repetition_penalty"] = options.repetition_penalty
    if extra:
        kwargs["extra_body"] = extra
    return kwargs


def _generation(
    completion: Any, names: NameMap | None, latency: float, restore_stop: bool = True
) -> Generation:
    """The :class:`Generation` of a completion; token counts are ``None`` (estimated) without ``usage``.

    ``restore_stop``: the request stopped at ``</tool_call>``, which the server left out.
    """
    choice = completion.choices[0]
    message = choice.message
    text = message.content or ""
    if names is None:
        if restore_stop and choice.finish_reason == "stop" and "<tool_call>" in text and STOP not in text:
            text += STOP
    else:
        text = map_content_calls(text, names)
    for call in message.tool_calls or []:
        function = getattr(call, "function", None)  # custom (non-function) tool calls have none
        if function is not None:
            name = names.original(function.name) if names else function.name
            text += "\n" + call_block(name, decode_arguments(function.arguments))
    reasoning = getattr(message, "reasoning_content", None) or getattr(message, "reasoning", None)
    usage = completion.usage
    details = getattr(usage, "prompt_tokens_details", None)
    return Generation(
        text=text,
        input_tokens=usage.prompt_tokens if usage else None,
        output_tokens=usage.completion_tokens if usage else None,
        cached_input_tokens=getattr(details, "cached_tokens", None),
        latency_s=latency,
        tokens_estimated=usage is None,
        finish_reason=choice.finish_reason,
        reasoning=reasoning if isinstance(reasoning, str) else None,
    )


def _functions(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    # Without the adapter's schemas (a request built by hand): Qwen3-VL's relative grid, the default.
    return [computer_use_function((1000, 1000)), *(t.to_function() for t in tools)]


def _wire_function(function: dict[str, Any], names: NameMap) -> dict[str, Any]:
    inner = dict(function["function"])
    inner["name"] = names.wire(inner["name"])
    return {"type": "function", "function": inner}


def _replay_calls(messages: list[Message], names: NameMap) -> list[Message]:
    """Function-calling history: past calls as ``tool_calls`` + ``tool`` results, under wire names."""
    out: list[Message] = []
    pending: str | None = None  # the id of the call whose result opens the next user turn
    for message in messages:
        if pending is not None and message["role"] == "user":
            result, rest = take_result(message["content"])
            out.append({"role": "tool", "tool_call_id": pending, "content": result})
            if rest:
                out.append({"role": "user", "content": rest})
            pending = None
            continue
        split = split_call(message)
        if split is None:
            out.append(message)
            continue
        head, name, arguments = split
        pending = f"call_{len(out)}"
        function = {"name": names.wire(name), "arguments": json.dumps(arguments, ensure_ascii=False)}
        call = {"id": pending, "type": "function", "function": function}
        out.append({"role": "assistant", "content": head or None, "tool_calls": [call]})
    return out


@register_policy("openai")
def _openai(rest: str, options: PolicyOptions) -> OpenAIPolicy:
    url, sep, model = rest.rpartition("#")
    if not sep or not url or not model:
        raise ConfigError(f"openai policy spec must be 'openai:URL#MODEL', got 'openai:{rest}'.")
    return OpenAIPolicy(url, model, options)
