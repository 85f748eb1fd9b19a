"""``check_mp3_meta``: an MP3's ID3 text tags against value rules, read as mutagen's EasyID3 reads them.

OSWorld reads the tags with mutagen (GPL); this module reads the same text frames with
the standard library: ID3v2.2/2.3/2.4 (tag and frame unsynchronisation, extended
headers, compressed frames, the four text encodings, several values per frame split at
the terminator), else an ID3v1 tag at the file's end. EasyID3 returns a key's values as
a list, which OSWorld joins with ``,``; a key the file does not set reads ``""``.
A file with no ID3 tag at all makes EasyID3 raise, so OSWorld's evaluation crashes:
a 0 with that reason here.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Mapping
from typing import Any

from osworld_mcp_env.errors import EvaluationError
from osworld_mcp_env.evaluators.metrics.cells import match_rule
from osworld_mcp_env.evaluators.registry import ZeroScore, register_metric

EASY_KEYS = {
    "title": "TIT2",
    "version": "TIT3",
    "artist": "TPE1",
    "albumartist": "TPE2",
    "conductor": "TPE3",
    "arranger": "TPE4",
    "album": "TALB",
    "composer": "TCOM",
    "lyricist": "TEXT",
    "tracknumber": "TRCK",
    "discnumber": "TPOS",
    "organization": "TPUB",
    "copyright": "TCOP",
    "encodedby": "TENC",
    "language": "TLAN",
    "bpm": "TBPM",
    "mood": "TMOO",
    "isrc": "TSRC",
}
"""EasyID3's plain text keys and the ID3v2.4 frame each reads (genre, with its numeric codes, and date,
which mutagen assembles from ID3v2.3's TYER/TDAT, are not here)."""

_V22_NAMES = {
    "TT2": "TIT2",
    "TT3": "TIT3",
    "TP1": "TPE1",
    "TP2": "TPE2",
    "TP3": "TPE3",
    "TP4": "TPE4",
    "TAL": "TALB",
    "TCM": "TCOM",
    "TXT": "TEXT",
    "TRK": "TRCK",
    "TPA": "TPOS",
    "TPB": "TPUB",
    "TCR": "TCOP",
    "TEN": "TENC",
    "TLA": "TLAN",
    "TBP": "TBPM",
    "TRC": "TSRC",
}


class NoID3Tag(ValueError):
    """The file carries neither an ID3v2 header nor an ID3v1 tag."""


def _syncsafe(data: bytes) -> int:
    return (data[0] << 21) | (data[1] << 14) | (data[2] << 7) | data[3]


def _resync(data: bytes) -> bytes:
    return data.replace(b"\xff\x00", b"\xff")


def _decode_text(payload: bytes) -> list[str]:
    """A text frame's values: encoding byte, then values split at the (encoding's) terminator."""
    if not payload:
        return []
    encoding, body = payload[0], payload[1:]
    if encoding in (1, 2):
        codec, nul = ("utf-16" if encoding == 1 else "utf-16-be"), b"\x00\x00"
        parts, start = [], 0
        for i in range(0, len(body) - 1, 2):
            if body[i : i + 2] == nul:
                parts.append(body[start:i])
                start = i + 2
        parts.append(body[start:])
        if encoding == 1:
            # Each value carries its own byte-order mark; a value without one is big-endian.
            texts = [
                p.decode(codec) if p[:2] in (b"\xff\xfe", b"\xfe\xff") else p.decode("utf-16-be")
                for p in parts
            ]
        else:
            texts = [p.decode(codec) for p in parts]
    else:
        codec = "latin-1" if encoding == 0 else "utf-8"
        texts = [p.decode(codec, errors="replace") for p in body.split(b"\x00")]
    if texts and texts[-1] == "":
        texts.pop()  # the optional terminator after the last value
    return texts


def _v2_frames(data: bytes, version: int, *, unsync_frames: bool = False) -> dict[str, list[str]]:
    frames: dict[str, list[str]] = {}
    pos = 0
    id_len, head_len = (3, 6) if version == 2 else (4, 10)
    while pos + head_len <= len(data):
        frame_id = data[pos : pos + id_len].decode("latin-1")
        if not frame_id.strip("\x00") or not frame_id.isalnum():
            break  # padding
        if version == 2:
            size, flags = int.from_bytes(data[pos + 3 : pos + 6], "big"), 0
        elif version == 3:
            size, flags = struct.unpack(">IH", data[pos + 4 : pos + 10])
        else:
            size, flags = _syncsafe(data[pos + 4 : pos + 8]), struct.unpack(">H", data[pos + 8 : pos + 10])[0]
        raw = data[pos + head_len : pos + head_len + size]
        pos += head_len + size
        payload = _frame_payload(raw, flags | (0x0002 if unsync_frames else 0), version)
        name = _V22_NAMES.get(frame_id, frame_id) if version == 2 else frame_id
        if payload is not None and name.startswith("T") and name != "TXXX" and name not in frames:
            frames[name] = _decode_text(payload)
    return frames


def _frame_payload(payload: bytes, flags: int, version: int) -> bytes | None:
    """The frame's data without its flag-announced extras; None for an encrypted frame."""
    if version == 3:
        if flags & 0x0040:
            return None
        if flags & 0x0020:
            payload = payload[1:]
        if flags & 0x0080:
            payload = zlib.decompress(payload[4:])
    elif version == 4:
        if flags & 0x0004:
            return None
        if flags & 0x0040:
            payload = payload[1:]
        if flags & 0x0009:  # a data-length indicator, which compression implies
            payload = payload[4:]
        if flags & 0x0002:
            payload = _resync(payload)
        if flags & 0x0008:
            payload = zlib.decompress(payload)
    return payload


def _v1_frames(tail: bytes) -> dict[str, list[str]]:
    def field(raw: bytes) -> list[str]:
        text = raw.split(b"\x00")[0].strip().decode("latin-1")
        return [text] if text else []

    found = {"TIT2": field(tail[3:33]), "TPE1": field(tail[33:63]), "TALB": field(tail[63:93])}
    if tail[125] == 0 and tail[126]:
        found["TRCK"] = [str(tail[126])]
    return {k: v for k, v in found.items() if v}


def read_id3_text(path: str) -> dict[str, list[str]]:
    """The file's ID3 text frames by ID3v2.4 name (``TIT2``: [values]).

    Raises:
        NoID3Tag: Neither tag is there.
        OSError: The file cannot be read.
    """
    with open(path, "rb") as f:
        blob = f.read()
    if blob[:3] == b"ID3" and len(blob) >= 10 and blob[3] in (2, 3, 4):
        version, flags, size = blob[3], blob[5], _syncsafe(blob[6:10])
        data = blob[10 : 10 + size]
        if flags & 0x80 and version < 4:
            data = _resync(data)
        if flags & 0x40 and version == 3:
            data = data[4 + struct.unpack(">I", data[:4])[0] :]
        elif flags & 0x40 and version == 4:
            data = data[_syncsafe(data[:4]) :]
        # ID3v2.4's tag-level flag says every frame is unsynchronised, each on its own.
        return _v2_frames(data, version, unsync_frames=version == 4 and bool(flags & 0x80))
    if len(blob) >= 128 and blob[-128:-125] == b"TAG":
        return _v1_frames(blob[-128:])
    raise NoID3Tag(f"{path}: no ID3 tag")


@register_metric("check_mp3_meta")
def check_mp3_meta(result: Any, expected: Any, **options: Any) -> float:
    """1 when every ``{key: {"method", "ref"}}`` rule holds for that EasyID3 key's values, joined by ``,``."""
    if not isinstance(expected, Mapping) or not expected:
        raise EvaluationError(f"check_mp3_meta: expected {{key: rule}}, got {expected!r:.200}")
    unknown = sorted(set(expected) - set(EASY_KEYS))
    if unknown:
        raise EvaluationError(f"check_mp3_meta: EasyID3 keys not implemented here: {unknown}")
    if result is None:
        return 0.0
    try:
        frames = read_id3_text(result)
    except (OSError, NoID3Tag, zlib.error, struct.error, UnicodeDecodeError) as exc:
        raise ZeroScore(f"check_mp3_meta: {exc} (mutagen raises, so OSWorld does)") from exc
    try:
        return float(
            all(match_rule(",".join(frames.get(EASY_KEYS[k], [])), rule) for k, rule in expected.items())
        )
    except (TypeError, ValueError, AttributeError) as exc:
        raise ZeroScore(f"check_mp3_meta: a rule OSWorld's matcher raises on: {exc}") from exc
