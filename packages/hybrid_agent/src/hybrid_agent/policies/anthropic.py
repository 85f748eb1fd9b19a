"""``anthropic:MODEL``: Claude through the Messages API and its computer-use tool.

Requests go through the official ``anthropic`` client (the ``hybrid-agent[anthropic]``
extra, imported only when the policy is built), on the beta Messages endpoint with the
``computer`` tool: ``computer_20250124`` and the ``computer-use-2025-01-24`` beta header
by default, or another documented version (``PolicyOptions.extra["computer_tool"]``,
the CLI's ``--computer-tool``; :data:`TOOL_BETAS` lists them with their headers).

Auth and endpoint as the SDK does it: the key from ``ANTHROPIC_API_KEY`` (or the
variable named by ``--api-key-env``), sent as the client sends it; the endpoint from
``ANTHROPIC_BASE_URL`` when set. Retries, failures and their codes are the shared ones
of :mod:`hybrid_agent.policies.provider` (429 and 5xx retried honouring
``Retry-After``, 401/403 ``auth`` and not retried, a too-long prompt
``context_length``, an answer that is not a message ``malformed_response``).

What the model is shown:

* screenshots downscaled to Anthropic's recommended size for the screen's aspect
  ratio (XGA 1024x768, WXGA 1280x800, FWXGA 1366x768;
  :func:`hybrid_agent.provider_actions.scaled_display`), and the ``computer`` tool
  declared at that size, so the coordinates it answers are pixels of what it saw; they
  are mapped back onto the screen here, and the policy declares screen pixels
  (``coordinates = "absolute_screen"``) so the agent loop maps nothing again;
* the MCP tools shown this step as regular tools beside ``computer`` (names made
  API-valid by :class:`~hybrid_agent.policies.calls.NameMap`), plus ``terminate`` and
  ``answer``, the env's episode-ending actions, which ``computer`` lacks;
* the context as the agent loop built it (window, retention, one-line history), with
  the system message's ``<tool_call>`` rules replaced by native ones. A past step's
  assistant turn is replayed as Claude wrote it (text, ``tool_use`` with its id, its
  own action and display coordinates) and the next user turn opens with the matching
  ``tool_result``: the call's relayed text and the screenshot after it.

The answer's ``tool_use`` blocks come back as ``<tool_call>`` text in the env's
vocabulary (:func:`hybrid_agent.provider_actions.from_anthropic`); actions the env
lacks reach the parser under their own names and become its typed errors. Thinking
blocks go to ``Generation.reasoning``; token counts include cache reads and writes,
and cache reads are ``cached_input_tokens``. Sampling settings (temperature, top_p,
seed, repetition_penalty) are not sent: the current client's ``messages.create`` takes
none of them, and recent Claude models fix their own; a model that accepts one gets it
through ``--extra-body``.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from PIL import Image

from hybrid_agent.errors import ConfigError
from hybrid_agent.messages import images_of, png_base64
from hybrid_agent.policies.base import Generation, PolicyOptions, PolicyRequest, register_policy
from hybrid_agent.policies.calls import NO_RESULT, IssuedCalls, NameMap, call_block, split_call, take_result
from hybrid_agent.policies.provider import ApiKey, RequestPool, describe_failure, failure, load_sdk, malformed
from hybrid_agent.prompt import end_functions, native_calls_prompt
from hybrid_agent.provider_actions import display_to_screen, from_anthropic, scaled_display
from hybrid_agent.trajectory import GUI_TOOL_NAME, Call

if TYPE_CHECKING:
    import anthropic

DEFAULT_KEY_ENV = "ANTHROPIC_API_KEY"
COMPUTER = "computer"
TOOL_BETAS = {
    "computer_20241022": "computer-use-2024-10-22",
    "computer_20250124": "computer-use-2025-01-24",
    "computer_20251124": "computer-use-2025-11-24",
}
"""The documented ``computer`` tool versions and the beta header each needs."""
DEFAULT_TOOL = "computer_20250124"
# Messages API stop reasons -> FinishReason values.
_FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "content_filter",
}
_END_ACTIONS = tuple(f["function"]["name"] for f in end_functions())

Size = tuple[int, int]


class AnthropicPolicy(RequestPool):
    """Messages API client for one Claude model with the ``computer`` tool.

    Attributes:
        url: The API base the client talks to.
        tools_in_request: The tools travel in the request, not in the system text.
        coordinates: The calls this policy emits are in screen pixels (mapped back from the display).
        concurrent: Each env's request is sent as it comes.
    """

    tools_in_request = True
    coordinates = "absolute_screen"

    def __init__(self, model: str, options: PolicyOptions | None = None) -> None:
        """Builds the client.

        Args:
            model: The model name (``claude-sonnet-4-5``, ...).
            options: Sampling, auth, timeout and retry settings; ``extra["computer_tool"]``
                picks the tool version.

        Raises:
            ConfigError: The ``anthropic`` package is not installed, an unknown tool
                version, or ``extra_body`` is not an object.
        """
        self.options = options or PolicyOptions()
        if not isinstance(self.options.extra_body, dict):
            raise ConfigError(f"extra_body must be a JSON object, got {self.options.extra_body!r}.")
        self.tool_version = self.options.extra.get("computer_tool", DEFAULT_TOOL)
        if self.tool_version not in TOOL_BETAS:
            raise ConfigError(
                f"Unknown computer tool version {self.tool_version!r}; "
                f"expected one of {', '.join(TOOL_BETAS)}."
            )
        self._sdk = load_sdk("anthropic", "anthropic")
        self.model = model
        self.name = f"anthropic:{model}"
        self._key = ApiKey.read(self.options.api_key_env or DEFAULT_KEY_ENV)
        # No base_url: the client reads ANTHROPIC_BASE_URL itself, as it documents.
        self._client: anthropic.Anthropic = self._sdk.Anthropic(
            api_key=self._key.value, timeout=self.options.timeout_s, max_retries=self.options.retries
        )
        self.url = str(self._client.base_url).rstrip("/")
        self._issued = IssuedCalls()
        self._start_pool(self.options.concurrency, "anthropic")

    def _one(self, request: PolicyRequest) -> Generation:
        images = images_of(request.messages)
        screen = images[-1].size if images else None  # the current frame is the last image
        display = scaled_display(screen) if screen else None
        kwargs, names = self._request(request, screen, display)
        started = time.perf_counter()
        try:
            message = self._client.beta.messages.create(**kwargs)
        except (self._sdk.APIError, ValueError) as exc:  # ValueError: a body that is not JSON
            return failure(self.url, *describe_failure(self._sdk, exc, self._key), started)
        try:
            return self._generation(request, message, names, screen, display, time.perf_counter() - started)
        except (AttributeError, KeyError, TypeError) as exc:  # the client does not validate answers
            return malformed(self.url, message, exc, started)

    def _request(
        self, request: PolicyRequest, screen: Size | None, display: Size | None
    ) -> tuple[dict[str, Any], NameMap]:
        past = [split[1] for split in map(split_call, request.messages) if split is not None]
        functions = [*end_functions(), *(tool.to_function() for tool in request.tools)]
        names = NameMap([COMPUTER, *(f["function"]["name"] for f in functions), *past])
        tools: list[dict[str, Any]] = []
        if display is not None:  # no screenshot in the context: no GUI to offer
            tools.append(
                {
                    "type": self.tool_version,
                    "name": COMPUTER,
                    "display_width_px": display[0],
                    "display_height_px": display[1],
                }
            )
        for function in functions:
            inner = function["function"]
            tools.append(
                {
                    "name": names.wire(inner["name"]),
                    "description": inner["description"],
                    "input_schema": inner["parameters"],
                }
            )
        system = request.messages[0]
        kwargs: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.options.max_tokens,
            "system": native_calls_prompt(system["content"]) if system["role"] == "system" else "",
            "messages": _messages(request, self._issued, screen, display),
            "tools": tools,
            "betas": [TOOL_BETAS[self.tool_version]],
        }
        if self.options.extra_body:
            kwargs["extra_body"] = dict(self.options.extra_body)
        return kwargs, names

    def _generation(
        self,
        request: PolicyRequest,
        message: Any,
        names: NameMap,
        screen: Size | None,
        display: Size | None,
        latency: float,
    ) -> Generation:
        texts: list[str] = []
        thoughts: list[str] = []
        calls: list[Call] = []
        for block in message.content:
            if block.type == "text":
                texts.append(block.text)
            elif block.type == "thinking":
                thoughts.append(block.thinking)
            elif block.type == "tool_use":
                calls.append(_env_call(names.original(block.name), block.input, screen, display))
        if len(calls) == 1:  # a step: replay it as written next time
            content = [block.model_dump(mode="json", exclude_none=True) for block in message.content]
            self._issued.add(request, calls[0], content)
        text = "\n".join([*texts, *(call_block(call.name, call.arguments) for call in calls)])
        usage = message.usage
        cached = getattr(usage, "cache_read_input_tokens", None)
        written = getattr(usage, "cache_creation_input_tokens", None)
        return Generation(
            text=text,
            input_tokens=usage.input_tokens + (cached or 0) + (written or 0),
            output_tokens=usage.output_tokens,
            cached_input_tokens=cached,
            latency_s=latency,
            finish_reason=_FINISH.get(message.stop_reason, message.stop_reason),
            reasoning="\n".join(thoughts) if thoughts else None,
        )


def _env_call(name: str, tool_input: Any, screen: Size | None, display: Size | None) -> Call:
    """One ``tool_use`` as the env call it stands for (``computer`` input mapped onto the screen)."""
    if not isinstance(tool_input, dict):
        return Call(name, {"input": tool_input})  # the parser reports it
    if name == COMPUTER and screen is not None and display is not None:
        return Call(GUI_TOOL_NAME, display_to_screen(from_anthropic(tool_input), display, screen))
    if name in _END_ACTIONS:
        return Call(GUI_TOOL_NAME, {"action": name, **tool_input})
    return Call(name, tool_input)


def _messages(
    request: PolicyRequest, issued: IssuedCalls, screen: Size | None, display: Size | None
) -> list[dict[str, Any]]:
    """The context as Messages API turns: past steps as ``tool_use`` + ``tool_result`` where recorded."""
    replayed = issued.replay(request, request.messages)
    out: list[dict[str, Any]] = []
    pending: str | None = None  # the tool_use id whose result opens the next user turn
    for message, items in zip(request.messages, replayed, strict=True):
        role, content = message["role"], message["content"]
        if role == "system":
            continue
        if role == "assistant":
            ids = [b["id"] for b in items or [] if b.get("type") == "tool_use"]
            pending = ids[0] if ids else None
            out.append({"role": "assistant", "content": items if ids else [_text(content)]})
            continue
        blocks = [] if isinstance(content, list) else [_text(content)]
        parts = content if isinstance(content, list) else []
        if pending is not None:
            result, rest = take_result(parts)
            inner = ([_text(result)] if result != NO_RESULT else []) + [
                _part(p, screen, display) for p in rest[:1]
            ]
            blocks.append({"type": "tool_result", "tool_use_id": pending, "content": inner})
            parts, pending = rest[1:], None
        blocks.extend(_part(p, screen, display) for p in parts)
        out.append({"role": "user", "content": blocks})
    return out


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _part(part: dict[str, Any], screen: Size | None, display: Size | None) -> dict[str, Any]:
    if part["type"] != "image":
        return _text(part["text"])
    image = _scaled(part["image"], screen, display)
    return {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": png_base64(image)},
    }


def _scaled(image: Image.Image, screen: Size | None, display: Size | None) -> Image.Image:
    """``image`` shrunk by the display/screen ratio (older, already downscaled frames keep their ratio)."""
    if screen is None or display is None or screen == display:
        return image
    width = max(1, round(image.width * display[0] / screen[0]))
    height = max(1, round(image.height * display[1] / screen[1]))
    return image.resize((width, height), Image.Resampling.LANCZOS)


@register_policy("anthropic")
def _anthropic(rest: str, options: PolicyOptions) -> AnthropicPolicy:
    if not rest:
        raise ConfigError(
            "anthropic policy spec must be 'anthropic:MODEL', e.g. 'anthropic:claude-sonnet-4-5'."
        )
    return AnthropicPolicy(rest, options)
