"""The guest's ``open`` route starts each document type in the app OSWorld's Ubuntu opens it with."""

from __future__ import annotations

import pytest
from osworld_mcp_env.guest import routes_osworld
from osworld_mcp_env.guest.routes_osworld import opener_command


@pytest.mark.parametrize(
    ("path", "app"),
    [
        ("/home/user/Desktop/book/Spectral Graph Theory.pdf", "evince"),
        ("/home/user/REPORT.PDF", "evince"),
        ("/home/user/Desktop/Bubble_Sort_tutorial.docx", "soffice"),
        ("/home/user/notes.txt", "mousepad"),
    ],
)
def test_a_document_opens_in_its_app_when_the_app_is_there(
    monkeypatch: pytest.MonkeyPatch, path: str, app: str
) -> None:
    monkeypatch.setattr(routes_osworld, "_on_path", lambda name: True)
    assert opener_command(path) == [app, path]


def test_without_its_app_or_a_known_type_xdg_open_decides(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(routes_osworld, "_on_path", lambda name: False)
    assert opener_command("/home/user/a.pdf") == ["xdg-open", "/home/user/a.pdf"]
    monkeypatch.setattr(routes_osworld, "_on_path", lambda name: True)
    assert opener_command("/home/user/a.unknown") == ["xdg-open", "/home/user/a.unknown"]
