"""os tools on real files, git and images; effects read back from disk."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from osworld_mcp_env.mcp_servers import ServerConfig, build_server
from PIL import Image

NS = "os."


class ToolCaller:
    """Calls one in-process server's tools over MCP (the SDK's in-memory ``Client``).

    The os tools touch only files, git and images, so they run on the host; the
    tools of real apps are tested inside the sandboxed desktop (mcp_sandbox.py).
    """

    def __init__(self, server: Any) -> None:
        self.server = server

    def __call__(self, name: str, **arguments: Any) -> Any:
        async def go() -> Any:
            with anyio.fail_after(60):
                async with Client(self.server) as client:
                    return await client.call_tool(name, arguments)

        return anyio.run(go)

    def effect(self, name: str, **arguments: Any) -> dict[str, Any]:
        result = self(name, **arguments)
        assert not result.is_error, result.content[0].text
        return result.structured_content["effect"]

    def data(self, name: str, **arguments: Any) -> Any:
        result = self(name, **arguments)
        assert not result.is_error, result.content[0].text
        assert result.structured_content["effect"]["kind"] == "read_only"
        return result.structured_content["data"]

    def error(self, name: str, **arguments: Any) -> str:
        result = self(name, **arguments)
        assert result.is_error, result
        return result.content[0].text


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path))  # git --global writes $HOME/.gitconfig
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / ".local/share"))
    return tmp_path


@pytest.fixture
def call(home: Path) -> ToolCaller:
    return ToolCaller(build_server("os", ServerConfig(home=home)))


def test_search_copy_and_rename(call: ToolCaller, home: Path) -> None:
    (home / "a/b").mkdir(parents=True)
    (home / "a/b/x_failed.ipynb").write_text("1")
    (home / "a/Report.TXT").write_text("2")
    assert call.data(NS + "search_files", keyword="report") == [str(home / "a/Report.TXT")]
    assert call.data(NS + "search_files", keyword="nothing-like-this") == []
    effect = call.effect(NS + "copy_matching_files_with_hierarchy", root_dir=str(home / "a"))
    assert effect["count"] == 1 and (home / "a/fails/b/x_failed.ipynb").read_text() == "1"
    assert call.effect(NS + "rename_directory", old_path=str(home / "a"), new_path="~/c")["count"] == 1
    assert (home / "c/Report.TXT").exists() and not (home / "a").exists()
    assert "does not exist" in call.error(NS + "rename_directory", old_path="~/c", new_path="~/x/y/z")


def test_trash_restore(call: ToolCaller, home: Path) -> None:
    trash = Path(call.data(NS + "get_trash_directory")["path"])
    trash.mkdir(parents=True)
    (trash.parent / "info").mkdir()
    (trash / "poster.png").write_bytes(b"png")
    (trash.parent / "info/poster.png.trashinfo").write_text(
        f"[Trash Info]\nPath={home}/Pictures/poster.png\nDeletionDate=2024-01-01T00:00:00\n"
    )
    assert call.effect(NS + "restore_file", file_name="poster.png")["targets"] == [
        f"{home}/Pictures/poster.png"
    ]
    assert (home / "Pictures/poster.png").read_bytes() == b"png"
    assert "not in the Trash" in call.error(NS + "restore_file", file_name="poster.png")


def test_images(call: ToolCaller, home: Path) -> None:
    img = Image.new("RGBA", (20, 20), (255, 255, 255, 255))
    for x in range(5, 15):
        for y in range(5, 15):
            img.putpixel((x, y), (200, 0, 0, 255))
    img.save(home / "in.png")
    effect = call.effect(NS + "remove_image_background", image_path="in.png", output_path="out.png")
    assert effect["count"] == 400 - 100
    out = Image.open(home / "out.png")
    assert out.getpixel((0, 0))[3] == 0 and out.getpixel((10, 10)) == (200, 0, 0, 255)
    assert (
        call.effect(
            NS + "convert_image_format", image_path="in.png", output_format="jpg", output_path="in.jpg"
        )["count"]
        > 0
    )
    assert Image.open(home / "in.jpg").format == "JPEG"


def test_git_tools(call: ToolCaller, home: Path) -> None:
    repo = home / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    assert (
        call.effect(
            NS + "git_set_user_info", username="Ann", email="a@x.org", is_global=False, repo_path=str(repo)
        )["count"]
        == 2
    )
    assert (
        call.effect(
            NS + "git_set_user_info", username="Ann", email="a@x.org", is_global=False, repo_path=str(repo)
        )["kind"]
        == "none"
    )
    assert call.effect(NS + "git_set_user_info", username="G", email="g@x.org", is_global=True)["count"] == 2
    assert "name = G" in (home / ".gitconfig").read_text()
    (repo / "f.txt").write_text("hi")
    assert (
        call.effect(NS + "git_operation", operation="add", repo_path=str(repo), arguments=["f.txt"])["count"]
        == 1
    )
    effect = call.effect(
        NS + "git_operation", operation="commit", repo_path=str(repo), arguments=["-m", "first"]
    )
    assert effect["details"]["head_after"] and not effect["details"]["head_before"]
    zero = call.effect(NS + "git_operation", operation="status", repo_path=str(repo))
    assert zero["kind"] == "none" and zero["count"] == 0
    assert "failed" in call.error(
        NS + "git_operation", operation="checkout", repo_path=str(repo), arguments=["nope"]
    )


def test_calculator_and_terminal_size(call: ToolCaller, home: Path) -> None:
    assert call.data(NS + "calculator", expression="(2 + 3) * 4 ** 2 / 8") == 10
    assert "allowed" in call.error(NS + "calculator", expression="__import__('os')")
    assert call.effect(NS + "set_default_terminal_size", columns=120, rows=40)["count"] == 1
    assert "MiscDefaultGeometry=120x40" in (home / ".config/xfce4/terminal/terminalrc").read_text()
    assert call.effect(NS + "set_default_terminal_size", columns=120, rows=40)["kind"] == "none"


def test_desktop_settings_say_what_is_missing(call: ToolCaller) -> None:
    # pactl is absent on this desktop: the call is an error that says so, never a fake success.
    result = call(NS + "get_volume")
    assert result.is_error and "pactl" in result.content[0].text
    scale = call(NS + "get_text_scale")
    if not scale.is_error:
        assert isinstance(scale.structured_content["data"], float)
