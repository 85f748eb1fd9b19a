"""Tools whose cost grows with their arguments stop at ToolLimits and say so.

The os, code and vlc tools below touch only files, so their servers run in-process
on the host (the SDK's in-memory ``Client``); the office tools' bounds are tested
in the sandboxed desktop (test_mcp_calc.py, test_mcp_writer.py).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp_types import CallToolResult
from osworld_mcp_env.mcp_host.limits import ToolLimits
from osworld_mcp_env.mcp_servers import ServerConfig, build_server
from PIL import Image

pytestmark = [pytest.mark.timeout(120)]


def call(namespace: str, config: ServerConfig, name: str, **arguments: Any) -> CallToolResult:
    async def go() -> CallToolResult:
        with anyio.fail_after(60):
            async with Client(build_server(namespace, config)) as client:
                return await client.call_tool(f"{namespace}.{name}", arguments)

    return anyio.run(go)


def tree(root: Path, folders: int, files_each: int) -> None:
    for i in range(folders):
        (root / f"d{i}").mkdir(parents=True)
        for j in range(files_each):
            (root / f"d{i}" / f"f{j}.txt").write_text("cat\n")


def test_a_search_over_a_large_tree_stops_at_the_walk_limit_and_says_so(tmp_path: Path) -> None:
    tree(tmp_path, folders=20, files_each=10)
    small = ServerConfig(home=tmp_path, limits=ToolLimits(max_walk_entries=50))
    r = call("os", small, "search_files", keyword="nomatch", root_dir=str(tmp_path))
    assert not r.is_error and "stopped after 50 entries" in r.structured_content["message"]
    full = call("os", ServerConfig(home=tmp_path), "search_files", keyword="f1", root_dir=str(tmp_path))
    assert len(full.structured_content["data"]) == 20 and "stopped" not in full.structured_content["message"]
    r = call("os", small, "copy_matching_files_with_hierarchy", root_dir=str(tmp_path), pattern="*.txt")
    assert r.is_error and "Nothing copied" in r.content[0].text
    assert not (tmp_path / "fails").exists()
    r = call("vlc", small, "get_media_files", path=str(tmp_path), suffix=["txt"])
    assert not r.is_error and "stopped after 50 entries" in r.structured_content["message"]


def test_images_are_measured_before_they_are_decoded(tmp_path: Path) -> None:
    Image.new("RGB", (400, 300), "white").save(tmp_path / "big.png")
    small = ServerConfig(home=tmp_path, limits=ToolLimits(max_image_pixels=100_000, max_fill_pixels=100_000))
    for tool, extra in (("convert_image_format", {"output_format": "jpg"}), ("remove_image_background", {})):
        r = call("os", small, tool, image_path="big.png", output_path="out.png", **extra)
        assert r.is_error and "400x300 pixels" in r.content[0].text and "100000" in r.content[0].text
    assert not (tmp_path / "out.png").exists()
    r = call(
        "os",
        ServerConfig(home=tmp_path),
        "remove_image_background",
        image_path="big.png",
        output_path="o.png",
    )
    assert not r.is_error and r.structured_content["effect"]["count"] == 400 * 300
    assert Image.open(tmp_path / "o.png").getpixel((5, 5))[3] == 0


def test_a_fifo_in_the_tree_cannot_hang_the_editors_search(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("a cat\n")
    os.mkfifo(tmp_path / "trap.txt")  # reading it would block until a writer comes: never
    config = ServerConfig(home=tmp_path)
    r = call("code", config, "search_text", text="cat")
    assert [hit["file"] for hit in r.structured_content["data"]] == [str(tmp_path / "notes.txt")]
    assert (
        call("code", config, "replace_text", search_text="cat", replace_text="dog").structured_content[
            "effect"
        ]["count"]
        == 1
    )


def test_a_replace_that_would_outgrow_the_file_limit_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a" * 10_000)
    config = ServerConfig(home=tmp_path, limits=ToolLimits(max_text_file_bytes=100_000))
    r = call("code", config, "replace_text", search_text="a", replace_text="b" * 100)
    assert not r.is_error and r.structured_content["effect"]["count"] == 0
    assert "would exceed 100000" in r.structured_content["message"]
    assert (tmp_path / "a.txt").read_text() == "a" * 10_000
    r = call("code", config, "replace_text", search_text="a", replace_text="bb")
    assert r.structured_content["effect"]["count"] == 10_000


def test_compare_files_refuses_files_past_the_line_limit(tmp_path: Path) -> None:
    (tmp_path / "x.txt").write_text("\n".join(map(str, range(300))))
    (tmp_path / "y.txt").write_text("\n".join(map(str, range(1, 301))))
    config = ServerConfig(home=tmp_path, limits=ToolLimits(max_diff_lines=200))
    r = call("code", config, "compare_files", file1=str(tmp_path / "x.txt"), file2=str(tmp_path / "y.txt"))
    assert r.is_error and "at most 200" in r.content[0].text
