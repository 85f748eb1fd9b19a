"""Context policies by name: ``win4``, ``win2+drop``, ``all+skip+downscale`` ... and ``hybridcua``.

A name is a window (``win<k>``, or ``all`` for no window) followed by ``+``-joined
retention rules: any registered rule name, or a short alias (``drop`` =
``drop_on_success``, ``effect`` = ``drop_on_effect``, ``skip`` = ``skip_identical``,
``downscale`` = ``downscale_old``, ``a11y`` = ``a11y_old``, ``images`` =
``image_window``). The rules keep the order written; the registry validates them, so
every composition it allows works. Such a policy keeps the study's rendering: every
earlier step as a one-line history entry, the relayed result as ``Tool result:`` cut at L.

A named policy fixes the rendering too (:data:`NAMED_POLICIES`):

* ``hybridcua``: HybridCUA's RL context: the last 3 turns in full plus the current one
  (``win4``), images on the current and 2 previous frames (``images``, the older turn keeps
  a marker), one-line ``Step i:`` entries only for the steps that left the window, and each
  command's output relayed as ``CLI output:`` cut at 1,000 characters with HybridCUA's
  ``...(truncated)...`` marker (:func:`hybrid_agent.prompt.render_cli_output`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from hybrid_agent.errors import ConfigError
from hybrid_agent.retention import RetentionConfig

HISTORIES = ("all", "dropped")
RELAYS = ("tool_result", "cli_output")


@dataclass(frozen=True)
class ContextPolicy:
    """What a context policy name fixes: the retention and how past results and history are shown.

    Attributes:
        retention: The window and retention rules.
        history: ``all``: a one-line entry for every earlier step (the study); ``dropped``: only
            for the steps that left the window (HybridCUA).
        relay: ``tool_result``: ``Tool result: <text>`` cut at L (the study); ``cli_output``:
            ``CLI output:`` per command, each cut at ``tool_result_chars`` (HybridCUA).
        tool_result_chars: The cut this policy fixes; ``None``: the run's L.
    """

    retention: RetentionConfig = field(default_factory=RetentionConfig)
    history: str = "all"
    relay: str = "tool_result"
    tool_result_chars: int | None = None

    def __post_init__(self) -> None:
        if self.history not in HISTORIES or self.relay not in RELAYS:
            raise ConfigError(
                f"history must be one of {HISTORIES} and relay one of {RELAYS}, got {self.history!r}, "
                f"{self.relay!r}."
            )


NAMED_POLICIES = {
    "hybridcua": ContextPolicy(
        RetentionConfig(window=4, rules=("image_window",), image_window=3),
        history="dropped",
        relay="cli_output",
        tool_result_chars=1000,
    ),
}

RULE_ALIASES = {
    "drop": "drop_on_success",
    "effect": "drop_on_effect",
    "skip": "skip_identical",
    "downscale": "downscale_old",
    "a11y": "a11y_old",
    "images": "image_window",
}
_WINDOW = re.compile(r"^(?:win(\d+)|all)$")


def context_policy(name: str) -> ContextPolicy:
    """The policy a name stands for: a named one, else a window spec with the study's rendering.

    Raises:
        ConfigError: A malformed window part.
        RegistryError: An unknown rule (the message lists the known ones).
    """
    if name in NAMED_POLICIES:
        return NAMED_POLICIES[name]
    return ContextPolicy(retention_from_name(name))


def retention_from_name(name: str) -> RetentionConfig:
    """Parses a context policy name into a :class:`RetentionConfig` (a named policy gives its own).

    Raises:
        ConfigError: A malformed window part.
        RegistryError: An unknown rule (the message lists the known ones).
    """
    if name in NAMED_POLICIES:
        return NAMED_POLICIES[name].retention
    head, *rules = [part.strip() for part in name.split("+")]
    match = _WINDOW.match(head)
    if match is None:
        raise ConfigError(
            f"Context policy {name!r} must start with 'win<k>' (k >= 1) or 'all', e.g. 'win2+drop', "
            f"or be one of {sorted(NAMED_POLICIES)}."
        )
    window = int(match.group(1)) if match.group(1) else None
    return RetentionConfig(window=window, rules=tuple(RULE_ALIASES.get(rule, rule) for rule in rules))
