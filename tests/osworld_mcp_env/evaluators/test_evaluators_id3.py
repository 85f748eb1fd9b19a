"""check_mp3_meta on MP3 files whose ID3 tags are written byte by byte here (v2.2, v2.3, v2.4, v1)."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import pytest
from osworld_mcp_env.errors import EvaluationError
from osworld_mcp_env.evaluators import METRICS, ZeroScore
from osworld_mcp_env.evaluators.metrics.id3 import read_id3_text

mp3_meta = METRICS.get("check_mp3_meta").fn

AUDIO = b"\xff\xfb\x90\x64" + bytes(413)  # one silent MPEG-1 layer III frame header and its body


def syncsafe(n: int) -> bytes:
    return bytes([(n >> 21) & 0x7F, (n >> 14) & 0x7F, (n >> 7) & 0x7F, n & 0x7F])


def text_payload(encoding: int, *values: str) -> bytes:
    codec, nul = {
        0: ("latin-1", b"\0"),
        1: ("utf-16", b"\0\0"),
        2: ("utf-16-be", b"\0\0"),
        3: ("utf-8", b"\0"),
    }[encoding]
    return bytes([encoding]) + nul.join(v.encode(codec) for v in values)


def frame(version: int, frame_id: str, payload: bytes, flags: int = 0) -> bytes:
    if version == 2:
        return frame_id.encode() + len(payload).to_bytes(3, "big") + payload
    size = syncsafe(len(payload)) if version == 4 else struct.pack(">I", len(payload))
    return frame_id.encode() + size + struct.pack(">H", flags) + payload


def tag(version: int, *frames: bytes, flags: int = 0, padding: int = 64) -> bytes:
    body = b"".join(frames) + bytes(padding)
    return b"ID3" + bytes([version, 0, flags]) + syncsafe(len(body)) + body


def write(tmp_path: Path, name: str, data: bytes) -> str:
    path = tmp_path / name
    path.write_bytes(data + AUDIO)
    return str(path)


RULES = {"title": {"method": "eq", "ref": "Missing You"}, "artist": {"method": "eq", "ref": "Cheng Xiang"}}


@pytest.mark.parametrize("encoding", [0, 1, 2, 3])
def test_v23_and_v24_text_frames_in_every_encoding(tmp_path: Path, encoding: int):
    for version in (3, 4):
        if version == 3 and encoding in (2, 3):
            continue  # ID3v2.3 has only latin-1 and UTF-16 with a byte-order mark
        data = tag(
            version,
            frame(version, "TIT2", text_payload(encoding, "Missing You")),
            frame(
                version,
                "TPE1",
                text_payload(encoding, "Cheng Xiang") + (b"\0" if encoding in (0, 3) else b""),
            ),
        )
        assert mp3_meta(write(tmp_path, f"v{version}-{encoding}.mp3", data), RULES) == 1.0


def test_values_join_with_a_comma_and_unset_keys_read_empty(tmp_path: Path):
    data = tag(
        4, frame(4, "TIT2", text_payload(3, "Missing You")), frame(4, "TPE1", text_payload(3, "A", "B"))
    )
    path = write(tmp_path, "multi.mp3", data)
    assert read_id3_text(path) == {"TIT2": ["Missing You"], "TPE1": ["A", "B"]}
    assert mp3_meta(path, {"artist": {"method": "eq", "ref": "A,B"}}) == 1.0
    assert mp3_meta(path, {"album": {"method": "eq", "ref": ""}}) == 1.0
    assert mp3_meta(path, RULES) == 0.0


def test_v22_names_unsynchronisation_and_compression(tmp_path: Path):
    v22 = tag(
        2, frame(2, "TT2", text_payload(0, "Missing You")), frame(2, "TP1", text_payload(0, "Cheng Xiang"))
    )
    assert mp3_meta(write(tmp_path, "v22.mp3", v22), RULES) == 1.0
    # ID3v2.3 unsynchronised as a whole: every 0xFF is followed by an inserted 0x00.
    raw = frame(3, "TIT2", text_payload(0, "Missing You\xff")) + frame(
        3, "TPE1", text_payload(0, "Cheng Xiang")
    )
    body = raw.replace(b"\xff", b"\xff\x00") + bytes(16)
    unsynced = b"ID3" + bytes([3, 0, 0x80]) + syncsafe(len(body)) + body
    assert read_id3_text(write(tmp_path, "unsync.mp3", unsynced))["TIT2"] == ["Missing You\xff"]
    # ID3v2.3 zlib-compressed frame: 4 bytes of decompressed size, then the deflated data.
    plain = text_payload(0, "Missing You")
    packed = struct.pack(">I", len(plain)) + zlib.compress(plain)
    data = tag(3, frame(3, "TIT2", packed, flags=0x0080), frame(3, "TPE1", text_payload(0, "Cheng Xiang")))
    assert mp3_meta(write(tmp_path, "zlib.mp3", data), RULES) == 1.0


def test_id3v1_only_and_no_tag(tmp_path: Path):
    v1 = (
        b"TAG"
        + b"Missing You".ljust(30, b"\0")
        + b"Cheng Xiang".ljust(30, b"\0")
        + bytes(30 + 4 + 30)
        + b"\xff"
    )
    path = tmp_path / "v1.mp3"
    path.write_bytes(AUDIO + v1)
    assert mp3_meta(str(path), RULES) == 1.0
    with pytest.raises(ZeroScore, match="mutagen raises"):
        mp3_meta(write(tmp_path, "bare.mp3", b""), RULES)
    assert mp3_meta(None, RULES) == 0.0
    with pytest.raises(EvaluationError, match="genre"):
        mp3_meta(str(path), {"genre": {"method": "eq", "ref": "Pop"}})
