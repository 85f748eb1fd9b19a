"""4,000 typed characters reach a Writer document exactly, and the step returns once they are in.

Typing is batched XTest key events paced by the desktop's idleness (no paste), so
the document holds the whole text when the step returns, read back through UNO
by Debian's interpreter inside the desktop. The words are ones Writer's
AutoCorrect leaves alone (no sentence starts, no replacement-table entries).
"""

from __future__ import annotations

import random

import pytest

pytestmark = pytest.mark.desktop

WORDS = [
    "alpha",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "juliet",
    "kilo",
    "lima",
    "mike",
    "november",
    "oscar",
    "papa",
    "quebec",
    "romeo",
    "sierra",
    "tango",
    "uniform",
    "victor",
    "whiskey",
    "xray",
    "yankee",
    "zulu",
    "12",
    "345",
    "6789",
    "0",
]
READ_TEXT = """
import sys, uno
ctx = uno.getComponentContext()
resolver = ctx.ServiceManager.createInstanceWithContext("com.sun.star.bridge.UnoUrlResolver", ctx)
remote = resolver.resolve("uno:socket,host=127.0.0.1,port=2002;urp;StarOffice.ComponentContext")
desktop = remote.ServiceManager.createInstanceWithContext("com.sun.star.frame.Desktop", remote)
with open(sys.argv[1], "w", encoding="utf-8") as out:
    out.write(desktop.getCurrentComponent().getText().getString())
"""


def gui(env, **arguments):
    _obs, _reward, _terminated, _truncated, info = env.step({"name": "computer_use", "arguments": arguments})
    assert "error" not in info, info
    return info


def test_4000_typed_characters_are_in_the_document_when_the_step_returns(make_env):
    rng = random.Random(12)
    text = ("0 " + " ".join(rng.choice(WORDS) for _ in range(1200)))[:4000]
    env = make_env(task="writer-replace-word", enable_mcp=False, step_timeout_s=300.0)
    env.reset()
    desktop = env.unwrapped.desktop
    gui(env, action="left_click", coordinate=[960, 540])
    gui(env, action="key", keys=["ctrl", "End"])
    gui(env, action="key", keys=["Return"])
    gui(env, action="type", text=text)
    desktop.upload_file("/tmp/read_text.py", READ_TEXT.encode())
    assert desktop.execute(["/usr/bin/python3", "/tmp/read_text.py", "/tmp/text.txt"]).ok
    document = desktop.read_file("/tmp/text.txt").decode()
    assert document.split("\n")[-1] == text
