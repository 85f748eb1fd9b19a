"""Named agent settings: the agent fields and env options that make one condition of a study.

``study`` is the OSWorld-MCP study's agent as published (its tool lists, no skill text).
``hcu`` is the Hybrid Computer Use condition: the env's semantic channel (``ax`` tools,
env option ``ax_tools``), the stale-frame guard with every coordinate action citing its
frame, the graphical ``zoom`` offered to the model (the env always carries it out; the
study's prompt never shows it), and the skill text that teaches them
(:mod:`hybrid_agent.skill`). The ablation of
the skill text is ``hcu`` with ``skill_text`` off, one field. ``hybrid-agent eval
--setting NAME`` applies one; explicit ``--env-option`` values win over its options.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hybrid_agent.errors import ConfigError

if TYPE_CHECKING:
    from hybrid_agent.agent_loop import AgentConfig


@dataclass(frozen=True)
class AgentSetting:
    """One named condition.

    Attributes:
        description: What the condition is, for ``--help`` and run records.
        agent: :class:`~hybrid_agent.agent_loop.AgentConfig` fields it sets.
        env_options: ``gym.make`` keyword arguments it sets.
    """

    description: str
    agent: Mapping[str, Any] = field(default_factory=dict)
    env_options: Mapping[str, Any] = field(default_factory=dict)

    def apply(self, config: AgentConfig) -> AgentConfig:
        """``config`` with this setting's agent fields."""
        return dataclasses.replace(config, **self.agent)

    def env_kwargs(self, explicit: Mapping[str, Any]) -> dict[str, Any]:
        """This setting's env options under ``explicit`` ones (a caller's own choice wins)."""
        return {**self.env_options, **explicit}


AGENT_SETTINGS: Mapping[str, AgentSetting] = {
    "study": AgentSetting("The OSWorld-MCP study's agent: MCP tools and GUI actions, no skill text"),
    "hcu": AgentSetting(
        "Hybrid Computer Use: the ax tools (ax_tools), the guard with cited frames, zoom, the skill text",
        agent={"skill_text": True, "cite_frames": True, "zoom": True},
        env_options={"ax_tools": True, "stale_guard": True},
    ),
}


def agent_setting(name: str) -> AgentSetting:
    """The setting called ``name``.

    Raises:
        ConfigError: An unknown name (the message lists the known ones).
    """
    try:
        return AGENT_SETTINGS[name]
    except KeyError:
        raise ConfigError(f"Unknown agent setting {name!r}; known: {', '.join(AGENT_SETTINGS)}.") from None
