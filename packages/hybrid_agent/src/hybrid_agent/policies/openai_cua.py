"""``openai-cua:MODEL``: OpenAI's computer-use model through the Responses API.

Requests go through the official ``openai`` client (the ``hybrid-agent[openai]`` extra,
imported only when the policy is built) to ``responses.create`` with the
``computer_use_preview`` tool (``environment: linux``, the display at the screenshot's
size) beside the MCP tools shown this step and ``terminate``/``answer`` as function
tools. Auth and endpoint as the SDK does it: the key from ``OPENAI_API_KEY`` (or the
variable named by ``--api-key-env``), the endpoint from ``OPENAI_BASE_URL`` when set.
Retries and failure codes are the shared ones of :mod:`hybrid_agent.policies.provider`.

**Full input replay, not** ``previous_response_id``: every request carries the context
the agent loop built (window, retention, one-line history), so the study's context
policy decides what the model sees; a server-side chain would keep every screenshot.
Requests are therefore stateless: ``store: false``, ``truncation: "auto"`` (which the
computer-use model requires) and ``include: ["reasoning.encrypted_content"]``, so the
reasoning items a past ``computer_call`` came with can be replayed beside it. A past
step goes back as the answer's own items (reasoning, message, ``computer_call`` with
its ``call_id`` and action) followed by a ``computer_call_output`` holding the
screenshot taken after it (or a ``function_call_output`` with the tool's relayed text);
a step the policy did not answer itself (a resumed run) goes back as assistant text.

``computer_call`` actions become env calls (:func:`hybrid_agent.provider_actions.from_openai`),
in screen pixels (``coordinates = "absolute_screen"``). **Safety checks**: a call
that comes with ``pending_safety_checks`` is executed only when acknowledging was
configured (``PolicyOptions.extra["ack_safety_checks"]``, the CLI's
``--ack-safety-checks``); the acknowledgement is then sent with that call's
``computer_call_output``. Otherwise nothing is executed and the step ends with a
``safety_check`` error value naming the checks. Sampling settings are not sent (the
computer-use model takes its own); ``max_tokens`` is sent as ``max_output_tokens``.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from hybrid_agent.errors import ConfigError
from hybrid_agent.messages import data_url, images_of
from hybrid_agent.policies.base import (
    Generation,
    GenerationErrorCode,
    PolicyOptions,
    PolicyRequest,
    register_policy,
)
from hybrid_agent.policies.calls import (
    NO_RESULT,
    IssuedCalls,
    NameMap,
    call_block,
    decode_arguments,
    split_call,
    take_result,
)
from hybrid_agent.policies.provider import ApiKey, RequestPool, describe_failure, failure, load_sdk, malformed
from hybrid_agent.prompt import end_functions, native_calls_prompt
from hybrid_agent.provider_actions import from_openai
from hybrid_agent.trajectory import GUI_TOOL_NAME, Call

if TYPE_CHECKING:
    import openai

DEFAULT_KEY_ENV = "OPENAI_API_KEY"
ENVIRONMENT = "linux"
_END_ACTIONS = tuple(f["function"]["name"] for f in end_functions())
_INCOMPLETE = {"max_output_tokens": "length", "content_filter": "content_filter"}

Size = tuple[int, int]


class OpenAICUAPolicy(RequestPool):
    """Responses API client for OpenAI's computer-use model.

    Attributes:
        url: The API base the client talks to.
        ack_safety_checks: Acknowledge a call's pending safety checks and run it.
        tools_in_request: The tools travel in the request, not in the system text.
        coordinates: The calls this policy emits are in screen pixels.
        concurrent: Each env's request is sent as it comes.
    """

    tools_in_request = True
    coordinates = "absolute_screen"

    def __init__(self, model: str, options: PolicyOptions | None = None) -> None:
        """Builds the client.

        Args:
            model: The model name (``computer-use-preview``).
            options: Auth, timeout, retry and output-budget settings;
                ``extra["ack_safety_checks"]`` acknowledges safety checks.

        Raises:
            ConfigError: The ``openai`` package is not installed, or ``extra_body`` is not an object.
        """
        self.options = options or PolicyOptions()
        if not isinstance(self.options.extra_body, dict):
            raise ConfigError(f"extra_body must be a JSON object, got {self.options.extra_body!r}.")
        self.ack_safety_checks = bool(self.options.extra.get("ack_safety_checks", False))
        self._sdk = load_sdk("openai", "openai-cua")
        self.model = model
        self.name = f"openai-cua:{model}"
        self._key = ApiKey.read(self.options.api_key_env or DEFAULT_KEY_ENV)
        # No base_url: the client reads OPENAI_BASE_URL itself, as it documents.
        self._client: openai.OpenAI = self._sdk.OpenAI(
            api_key=self._key.value, timeout=self.options.timeout_s, max_retries=self.options.retries
        )
        self.url = str(self._client.base_url).rstrip("/")
        self._issued = IssuedCalls()
        self._start_pool(self.options.concurrency, "openai-cua")

    def _one(self, request: PolicyRequest) -> Generation:
        images = images_of(request.messages)
        screen = images[-1].size if images else None  # the current frame is the last image
        kwargs, names = self._request(request, screen)
        started = time.perf_counter()
        try:
            response = self._client.responses.create(**kwargs)
        except (self._sdk.APIError, ValueError) as exc:  # ValueError: a body that is not JSON
            return failure(self.url, *describe_failure(self._sdk, exc, self._key), started)
        try:
            return self._generation(request, response, names, started)
        except (AttributeError, KeyError, TypeError) as exc:  # the client does not validate answers
            return malformed(self.url, response, exc, started)

    def _request(self, request: PolicyRequest, screen: Size | None) -> tuple[dict[str, Any], NameMap]:
        past = [split[1] for split in map(split_call, request.messages) if split is not None]
        functions = [*end_functions(), *(tool.to_function() for tool in request.tools)]
        names = NameMap([*(f["function"]["name"] for f in functions), *past])
        tools: list[dict[str, Any]] = []
        if screen is not None:  # no screenshot in the context: no GUI to offer
            tools.append(
                {
                    "type": "computer_use_preview",
                    "display_width": screen[0],
                    "display_height": screen[1],
                    "environment": ENVIRONMENT,
                }
            )
        for function in functions:
            inner = function["function"]
            tools.append(
                {
                    "type": "function",
                    "name": names.wire(inner["name"]),
                    "description": inner["description"],
                    "parameters": inner["parameters"],
                    "strict": False,
                }
            )
        system = request.messages[0]
        kwargs: dict[str, Any] = {
            "model": self.model,
            "instructions": native_calls_prompt(system["content"]) if system["role"] == "system" else None,
            "input": _input(request, self._issued),
            "tools": tools,
            "truncation": "auto",
            "store": False,
            "include": ["reasoning.encrypted_content"],
            "max_output_tokens": self.options.max_tokens,
        }
        if self.options.extra_body:
            kwargs["extra_body"] = dict(self.options.extra_body)
        return kwargs, names

    def _generation(
        self, request: PolicyRequest, response: Any, names: NameMap, started: float
    ) -> Generation:
        texts: list[str] = []
        thoughts: list[str] = []
        calls: list[Call] = []
        checks: list[Any] = []
        for item in response.output:
            if item.type == "message":
                texts.extend(part.text for part in item.content if part.type == "output_text")
            elif item.type == "reasoning":
                thoughts.extend(part.text for part in item.summary or [])
            elif item.type == "computer_call":
                actions = [item.action] if item.action is not None else list(item.actions or [])
                for action in actions:
                    # The display is the screen itself: the coordinates are screen pixels already.
                    calls.append(
                        Call(GUI_TOOL_NAME, from_openai(action.model_dump(mode="json", exclude_none=True)))
                    )
                checks.extend(item.pending_safety_checks or [])
            elif item.type == "function_call":
                calls.append(_function_call(names.original(item.name), decode_arguments(item.arguments)))
        if checks and not self.ack_safety_checks:
            detail = "; ".join(f"{c.code}: {c.message}" for c in checks)
            why = f"the model's action needs an acknowledged safety check ({detail}); nothing was executed"
            return failure(
                self.url, GenerationErrorCode.SAFETY_CHECK, why + " (see --ack-safety-checks)", started
            )
        if len(calls) == 1:  # a step: replay it as answered next time
            self._issued.add(
                request, calls[0], [i.model_dump(mode="json", exclude_none=True) for i in response.output]
            )
        usage = response.usage
        details = getattr(usage, "input_tokens_details", None)
        incomplete = getattr(response, "incomplete_details", None)
        finish = _INCOMPLETE.get(getattr(incomplete, "reason", None) or "", "tool_calls" if calls else "stop")
        return Generation(
            text="\n".join([*texts, *(call_block(call.name, call.arguments) for call in calls)]),
            input_tokens=usage.input_tokens if usage else None,
            output_tokens=usage.output_tokens if usage else None,
            cached_input_tokens=getattr(details, "cached_tokens", None),
            latency_s=time.perf_counter() - started,
            tokens_estimated=usage is None,
            finish_reason=finish,
            reasoning="\n".join(thoughts) if thoughts else None,
        )


def _function_call(name: str, arguments: Any) -> Call:
    if name in _END_ACTIONS and isinstance(arguments, dict):
        return Call(GUI_TOOL_NAME, {"action": name, **arguments})
    return Call(name, arguments if isinstance(arguments, dict) else {"arguments": arguments})


def _input(request: PolicyRequest, issued: IssuedCalls) -> list[dict[str, Any]]:
    """The context as Responses input items: past steps as their own items + call outputs where recorded."""
    messages = request.messages
    replayed = issued.replay(request, messages)
    out: list[dict[str, Any]] = []
    pending: dict[str, Any] | None = None  # the call whose output opens the next user turn
    for index, (message, items) in enumerate(zip(messages, replayed, strict=True)):
        role, content = message["role"], message["content"]
        if role == "system":
            continue
        if role == "assistant":
            call = next((i for i in items or [] if i.get("type") in ("computer_call", "function_call")), None)
            following = messages[index + 1]["content"] if index + 1 < len(messages) else None
            if call is not None and (call["type"] == "function_call" or _frame_image(following) is not None):
                out.extend(items or [])
                pending = call
            else:
                out.append({"role": "assistant", "content": content})
                pending = None
            continue
        parts = content if isinstance(content, list) else [{"type": "text", "text": content}]
        if pending is not None:
            result, parts = take_result(parts)
            if pending["type"] == "computer_call":
                frame, parts = parts[0]["image"], parts[1:]  # checked at the call's turn
                if result != NO_RESULT:  # a screenshot output has no text: the result goes beside it
                    parts = [{"type": "text", "text": result}, *parts]
                output: dict[str, Any] = {
                    "type": "computer_call_output",
                    "call_id": pending["call_id"],
                    "output": {"type": "computer_screenshot", "image_url": data_url(frame)},
                }
                if pending.get("pending_safety_checks"):  # only executed when acknowledging was configured
                    output["acknowledged_safety_checks"] = pending["pending_safety_checks"]
                out.append(output)
            else:
                out.append({"type": "function_call_output", "call_id": pending["call_id"], "output": result})
            pending = None
        if parts:
            out.append({"role": "user", "content": [_part(p) for p in parts]})
    return out


def _frame_image(content: Any) -> Any:
    """The screenshot that opens a user turn after its call's result text, if it is an image."""
    if not isinstance(content, list):
        return None
    _, rest = take_result(content)
    return rest[0]["image"] if rest and rest[0]["type"] == "image" else None


def _part(part: dict[str, Any]) -> dict[str, Any]:
    if part["type"] == "image":
        return {"type": "input_image", "image_url": data_url(part["image"]), "detail": "auto"}
    return {"type": "input_text", "text": part["text"]}


@register_policy("openai-cua")
def _openai_cua(rest: str, options: PolicyOptions) -> OpenAICUAPolicy:
    if not rest:
        raise ConfigError(
            "openai-cua policy spec must be 'openai-cua:MODEL', e.g. 'openai-cua:computer-use-preview'."
        )
    return OpenAICUAPolicy(rest, options)
