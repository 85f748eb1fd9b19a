"""Metrics with OSWorld's names; importing this package registers them."""

from osworld_mcp_env.evaluators.metrics import (
    a11y,
    chrome,
    docs,
    general,
    gimp,
    images,
    impress_settings,
    one_task,
    pdf,
    records,
    slides,
    table,
    table_objects,
    thunderbird,
    vlc,
    writer_format,
)

__all__ = [
    "a11y",
    "chrome",
    "docs",
    "general",
    "gimp",
    "images",
    "impress_settings",
    "one_task",
    "pdf",
    "records",
    "slides",
    "table",
    "table_objects",
    "thunderbird",
    "vlc",
    "writer_format",
]
