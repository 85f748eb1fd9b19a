"""Named agent settings and the skill text: ``hcu`` turns the channel, the guard and the text on together."""

from __future__ import annotations

import dataclasses

import pytest
from hybrid_agent.agent_loop import AgentConfig
from hybrid_agent.context import ContextConfig, build_context
from hybrid_agent.errors import ConfigError
from hybrid_agent.prompt import RESPONSE_FORMAT_HEADING, PromptConfig, native_calls_prompt
from hybrid_agent.settings import AGENT_SETTINGS, agent_setting
from hybrid_agent.skill import SKILL_HEADING, SKILL_TEXT
from hybrid_agent.trajectory import Frame, Observation
from PIL import Image


def _system(config: AgentConfig) -> str:
    frame = Frame(Image.new("RGB", (64, 48)))
    context = build_context([], Observation(frame), "Do it.", (), config.context_config())
    return context.messages[0]["content"]


def test_hcu_sets_the_ax_tools_the_guard_and_the_skill_text_and_the_study_sets_nothing():
    hcu = agent_setting("hcu")
    config = hcu.apply(AgentConfig())
    assert config.skill_text and config.cite_frames and config.zoom
    assert hcu.env_kwargs({}) == {"ax_tools": True, "stale_guard": True}
    # A caller's explicit option wins: the ablation without the ax tools is one flag.
    assert hcu.env_kwargs({"ax_tools": False})["ax_tools"] is False
    study = agent_setting("study")
    assert study.apply(AgentConfig()) == AgentConfig() and study.env_kwargs({"x": 1}) == {"x": 1}
    assert not AgentConfig().skill_text  # off in the study's configs
    with pytest.raises(ConfigError, match="known: study, hcu"):
        agent_setting("hcx")
    assert set(AGENT_SETTINGS) == {"study", "hcu"}


def test_the_skill_text_is_one_section_before_the_response_rules_and_survives_native_calls():
    # Less the zoom it also offers (test_zoom_mapping.py), the skill text is the only difference.
    hcu = dataclasses.replace(agent_setting("hcu").apply(AgentConfig()), zoom=False)
    plain, taught = _system(AgentConfig()), _system(hcu)
    assert SKILL_HEADING not in plain
    assert taught.count(SKILL_TEXT) == 1
    assert taught.index(SKILL_HEADING) < taught.index(RESPONSE_FORMAT_HEADING)
    assert taught.replace(f"\n\n{SKILL_TEXT}", "") == plain  # the only difference
    assert SKILL_TEXT in native_calls_prompt(taught)
    for topic in (
        "ax.act",
        "[e17]",
        "stale_element_ref",
        "stale_gui_frame",
        "never resend",
        "wait step",
        "read",
    ):
        assert topic in SKILL_TEXT, topic
    # The prompt switch alone, for an ablation at the prompt level.
    assert ContextConfig(prompt=PromptConfig(skill_text=True)).prompt.skill_text
