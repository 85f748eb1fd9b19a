"""The cua side of ``bench_env.py --peer cua``: one run of timings against a running cua-computer-server.

Runs with the peer's own interpreter (``/tmp/bench-cua-venv/bin/python``), never the
project's: it needs ``websockets``, Pillow and numpy from that environment and
nothing from this repository. It speaks the server's WebSocket protocol
(``{"command", "params"}`` in, ``{"success", ...}`` out; a screenshot is a
base64 PNG in ``image_data``), which is what cua's own client sends, so every
timing includes the server's PNG encode and our decode, as an agent using cua pays them.

    python bench_peer_cua_client.py WS_URL ITERATIONS OUT_JSON
"""

from __future__ import annotations

import asyncio
import base64
import io
import json
import statistics
import sys
import time

import numpy as np
import websockets
from PIL import Image

# The same Calc cells and text as bench_env.py's CLICKS and TYPE10, so both sides do the same work.
CLICKS = ((300, 300), (420, 340))
TEXT = "abcdefghij"
STALE_AFTER_S = 0.3
MAX_MESSAGE = 64 * 2**20  # a 1920x1080 PNG in base64 is a few MB


class Peer:
    """One WebSocket connection; every command either succeeds or raises with the server's error."""

    def __init__(self, ws: websockets.ClientConnection) -> None:
        self.ws = ws

    async def command(self, name: str, **params: object) -> dict:
        await self.ws.send(json.dumps({"command": name, "params": params}))
        reply = json.loads(await self.ws.recv())
        if not reply.get("success", False):
            raise RuntimeError(f"cua-computer-server refused {name} {params}: {reply.get('error')}")
        return reply

    async def frame(self) -> np.ndarray:
        reply = await self.command("screenshot")
        png = base64.b64decode(reply["image_data"])
        return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))


async def settled(peer: Peer) -> tuple[int, ...]:
    """Waits (up to 60 s) for Calc to finish painting after its start: two equal frames 0.5 s apart."""
    previous = await peer.frame()
    for _ in range(120):
        await asyncio.sleep(0.5)
        current = await peer.frame()
        if np.array_equal(previous, current):
            return current.shape
        previous = current
    raise RuntimeError("the peer's screen never stopped changing")


async def measure(url: str, iterations: int) -> dict[str, float | int]:
    async with websockets.connect(url, max_size=MAX_MESSAGE) as ws:
        peer = Peer(ws)
        shape = await settled(peer)
        frame_s, click_s, type_s, typing_s = [], [], [], []
        for _ in range(iterations):
            start = time.perf_counter()
            await peer.frame()
            frame_s.append(time.perf_counter() - start)
        for i in range(iterations):
            x, y = CLICKS[i % 2]
            start = time.perf_counter()
            await peer.command("left_click", x=x, y=y)
            await peer.frame()
            click_s.append(time.perf_counter() - start)
        stale = 0
        for _ in range(iterations):
            start = time.perf_counter()
            await peer.command("type_text", text=TEXT)
            typed = time.perf_counter()
            after_typing = await peer.frame()
            type_s.append(time.perf_counter() - start)
            typing_s.append(typed - start)
            await asyncio.sleep(STALE_AFTER_S)
            stale += int(not np.array_equal(after_typing, await peer.frame()))
            await peer.command("press_key", key="esc")  # leave the cell's edit mode, as ours does
        return {
            "width": shape[1],
            "height": shape[0],
            "frame_ms": statistics.median(frame_s) * 1e3,
            "click_ms": statistics.median(click_s) * 1e3,
            "type_ms": statistics.median(type_s) * 1e3,
            "typing_ms": statistics.median(typing_s) * 1e3,
            "stale": stale,
        }


def main(argv: list[str]) -> int:
    url, iterations, out = argv[1], int(argv[2]), argv[3]
    result = asyncio.run(measure(url, iterations))
    with open(out, "w") as f:
        json.dump(result, f)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
