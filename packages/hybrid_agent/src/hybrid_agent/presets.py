"""Context policies by name: ``win4``, ``win2+drop``, ``all+skip+downscale`` ...

A name is a window (``win<k>``, or ``all`` for no window) followed by ``+``-joined
retention rules: any registered rule name, or a short alias (``drop`` =
``drop_on_success``, ``effect`` = ``drop_on_effect``, ``skip`` = ``skip_identical``,
``downscale`` = ``downscale_old``, ``a11y`` = ``a11y_old``, ``older`` = ``placeholder_old``).
The rules keep the order written; the registry validates them, so every composition it allows works.
"""

from __future__ import annotations

import re

from hybrid_agent.errors import ConfigError
from hybrid_agent.retention import RetentionConfig

RULE_ALIASES = {
    "drop": "drop_on_success",
    "effect": "drop_on_effect",
    "skip": "skip_identical",
    "downscale": "downscale_old",
    "a11y": "a11y_old",
    "older": "placeholder_old",
}
_WINDOW = re.compile(r"^(?:win(\d+)|all)$")


def retention_from_name(name: str) -> RetentionConfig:
    """Parses a context policy name into a :class:`RetentionConfig`.

    Raises:
        ConfigError: A malformed window part.
        RegistryError: An unknown rule (the message lists the known ones).
    """
    head, *rules = [part.strip() for part in name.split("+")]
    match = _WINDOW.match(head)
    if match is None:
        raise ConfigError(
            f"Context policy {name!r} must start with 'win<k>' (k >= 1) or 'all', e.g. 'win2+drop'."
        )
    window = int(match.group(1)) if match.group(1) else None
    return RetentionConfig(window=window, rules=tuple(RULE_ALIASES.get(rule, rule) for rule in rules))
