"""What every policy on an official provider SDK shares: the key, the SDK import, failures as values.

The ``openai:``, ``openai-cua:`` and ``anthropic:`` policies talk through the official
``openai`` and ``anthropic`` clients. Both clients are generated from one template and
raise the same exception family (``APIStatusError`` with ``status_code``,
``APIConnectionError`` for refused connections and timeouts), retry connection errors,
408, 409, 429 and 5xx ``max_retries`` times and honour ``Retry-After``; so one
function here turns any of their failures into a :class:`GenerationErrorCode` and a
message, and no policy raises out of ``generate``.
"""

from __future__ import annotations

import importlib
import os
import re
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from hybrid_agent.errors import ConfigError
from hybrid_agent.policies.base import Generation, GenerationErrorCode, PolicyRequest

PLACEHOLDER_KEY = "EMPTY"
"""Sent when the key variable is unset: servers started without a key accept any."""
DETAIL_CHARS = 500
"""Longest server text kept in an error message."""

# How OpenAI, Anthropic, vLLM and SGLang word a prompt that does not fit (the code, then the messages).
_CONTEXT_LENGTH = re.compile(
    r"context_length_exceeded|maximum context length|context length|maximum model length|prompt is too long",
    re.IGNORECASE,
)


class RequestPool(ABC):
    """One blocking SDK call per request, on a thread pool: the SDK clients are thread-safe.

    The runner calls a ``concurrent`` policy straight from each env's thread, so a request is
    sent as it comes and the server batches; ``generate`` answers in order, each failure an
    error value (``_one`` never raises).

    Attributes:
        concurrent: Each env's request is sent as it comes, never held for others.
    """

    concurrent = True
    _client: Any
    _pool: ThreadPoolExecutor

    def _start_pool(self, concurrency: int, name: str) -> None:
        self._pool = ThreadPoolExecutor(concurrency, thread_name_prefix=name)

    def generate(self, requests: Sequence[PolicyRequest]) -> list[Generation]:
        """Sends the requests concurrently; answers in order, failures as error values."""
        return list(self._pool.map(self._one, requests))

    def close(self) -> None:
        """Stops the request threads and closes the connection pool."""
        self._pool.shutdown(wait=False)
        self._client.close()

    @abstractmethod
    def _one(self, request: PolicyRequest) -> Generation:
        """One request and its answer, a failure as an error value."""


def load_sdk(package: str, kind: str) -> ModuleType:
    """Imports an optional provider SDK, or says which extra installs it.

    Raises:
        ConfigError: The package is not installed.
    """
    try:
        return importlib.import_module(package)
    except ImportError as exc:
        raise ConfigError(
            f"The {kind}: policy needs the {package} client ({exc}); install it with "
            f"`pip install 'hybrid-agent[{package}]'` (or `uv sync --extra {package}`)."
        ) from None


@dataclass(frozen=True)
class ApiKey:
    """The API key a policy sends, and where it was looked for (for the ``auth`` error's advice).

    Attributes:
        variable: The environment variable read.
        value: Its value, or :data:`PLACEHOLDER_KEY` when unset.
        is_set: The variable held a key.
    """

    variable: str
    value: str
    is_set: bool

    @classmethod
    def read(cls, variable: str) -> ApiKey:
        """Reads ``variable`` once, when the policy is built."""
        value = os.environ.get(variable)
        return cls(variable, value or PLACEHOLDER_KEY, bool(value))


def describe_failure(sdk: ModuleType, exc: Exception, key: ApiKey) -> tuple[GenerationErrorCode, str]:
    """The error code and message of an exception raised by an ``openai``/``anthropic`` client call.

    401/403 is ``auth`` (naming the key variable), a 400/413 about the prompt's length is
    ``context_length``, any other status ``http_error``, a refused connection, a timeout or
    a torn body ``transport``; anything else (a body that is not JSON) ``malformed_response``.
    """
    if isinstance(exc, sdk.APIStatusError):
        detail = f"HTTP {exc.status_code}: {exc.message}"[:DETAIL_CHARS]
        if exc.status_code in (401, 403):
            state = "is set" if key.is_set else "is not set, so a placeholder key was sent"
            return GenerationErrorCode.AUTH, (
                f"{detail} — the server refused the API key: {key.variable} {state}; "
                "export the server's key under that name (or pick another with --api-key-env)."
            )
        code = getattr(exc, "code", None)
        if exc.status_code in (400, 413) and _CONTEXT_LENGTH.search(f"{code} {exc.message}"):
            return GenerationErrorCode.CONTEXT_LENGTH, detail
        return GenerationErrorCode.HTTP, detail
    if isinstance(exc, sdk.APIConnectionError):  # timeouts too
        cause = exc.__cause__
        why = f" ({type(cause).__name__}: {cause})" if cause else ""
        return GenerationErrorCode.TRANSPORT, f"{type(exc).__name__}: {exc}{why}"
    return GenerationErrorCode.MALFORMED_RESPONSE, f"{type(exc).__name__}: {exc}"[:DETAIL_CHARS]


def failure(where: str, code: GenerationErrorCode, detail: str, started: float) -> Generation:
    """A :class:`Generation` that carries an error instead of an answer (latency since ``started``)."""
    latency = time.perf_counter() - started
    return Generation(text="", latency_s=latency, error=f"{where}: {detail}", error_code=code)


def malformed(where: str, answer: object, exc: Exception, started: float) -> Generation:
    """The failure for an answer the client parsed but that is not what the API documents."""
    detail = f"not a documented answer ({type(exc).__name__}: {exc}): {str(answer)[:DETAIL_CHARS]}"
    return failure(where, GenerationErrorCode.MALFORMED_RESPONSE, detail, started)
