"""The anthropic: policy end to end on the real embedded desktop, against a Messages API server process.

The server answers the bundled calc task's GUI oracle as Claude would write it: ``computer``
tool_use blocks in pixels of the downscaled screenshot (1366x768 for the 1920x1080
desktop) and xdotool key names. The official client, the display scaling, the rewrite into
the env's actions and the replayed tool_use/tool_result turns run for real; LibreOffice
must end up with the formula for the task to score.
"""

import base64
import io
import sys
from pathlib import Path

import pytest
from hybrid_agent.policies import PolicyOptions, make_policy
from hybrid_agent.recorder import iter_episodes
from hybrid_agent.runner import RunConfig, Runner
from hybrid_agent.suite import load_suite
from osworld_mcp_env.tasks.bundled import bundled_solution
from PIL import Image
from script_server import ScriptServers

sys.path.insert(0, str(Path(__file__).parents[2] / "osworld_mcp_env"))
from desktop_support import desktop_missing

pytest.importorskip("anthropic")  # the hybrid-agent[anthropic] extra

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.slow,
    pytest.mark.skipif(
        desktop_missing() is not None, reason=f"embedded desktop unavailable: {desktop_missing()}"
    ),
]

TASK = "calc-sum-column"
SCREEN, DISPLAY = (1920, 1080), (1366, 768)


def as_claude(call: dict, index: int) -> dict:
    """One oracle call (env vocabulary, screen pixels) as Claude's tool_use block (display pixels)."""
    args = dict(call["arguments"])
    action = args.pop("action")
    if action == "terminate":
        return {"type": "tool_use", "id": f"toolu_{index}", "name": "terminate", "input": args}
    tool_input = {"action": action}
    if action == "key":
        tool_input["text"] = "+".join(args["keys"])
    elif action == "type":
        tool_input["text"] = args["text"]
    elif "coordinate" in args:
        x, y = args["coordinate"]
        tool_input["coordinate"] = [round(x * DISPLAY[0] / SCREEN[0]), round(y * DISPLAY[1] / SCREEN[1])]
    return {"type": "tool_use", "id": f"toolu_{index}", "name": "computer", "input": tool_input}


def test_claude_tool_use_solves_the_calc_task_on_the_desktop(tmp_path, monkeypatch):
    oracle = bundled_solution(TASK, "oracle")
    script = [
        {"json": {"id": f"msg_{i}", "type": "message", "role": "assistant", "model": "claude-test",
                  "content": [{"type": "text", "text": "Next step."}, as_claude(call, i)],
                  "stop_reason": "tool_use", "usage": {"input_tokens": 2000, "output_tokens": 40}}}
        for i, call in enumerate(oracle)
    ]  # fmt: skip
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-desktop")
    with ScriptServers(tmp_path) as servers:
        url, log = servers.start(script, "/v1/messages", "sk-ant-desktop")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
        policy = make_policy("anthropic:claude-test", PolicyOptions(retries=0))
        tasks = [t for t in load_suite("bundled") if t.task_id == TASK]
        try:
            result = Runner(RunConfig(policy="anthropic:claude-test"), policy, tmp_path / "run",
                            progress=False).evaluate(tasks)  # fmt: skip
        finally:
            policy.close()
        bodies = log.bodies
    assert (result.finished, result.errors) == (1, 0)
    (record,) = list(iter_episodes(tmp_path / "run"))
    assert record.end["score"] == 1.0 and record.end["claimed_success"] is True
    sent = [s["action"] for s in record.steps]
    # Each click cites the screenshot it was decided on (the layout guard's frame id).
    cited = [a["arguments"].pop("frame_id", None) for a in sent]
    pointed = ["coordinate" in a["arguments"] for a in sent]
    assert [isinstance(c, int) for c in cited] == pointed and any(pointed)
    assert sent == oracle  # display pixels mapped back land on the oracle's screen pixels
    assert len(bodies) == len(oracle)
    computer = bodies[0]["tools"][0]
    assert (computer["display_width_px"], computer["display_height_px"]) == DISPLAY
    image = next(b for b in bodies[0]["messages"][-1]["content"] if b["type"] == "image")
    assert Image.open(io.BytesIO(base64.b64decode(image["source"]["data"]))).size == DISPLAY
    last = bodies[-1]["messages"]
    replayed = [b for m in last if m["role"] == "assistant" for b in m["content"] if b["type"] == "tool_use"]
    results = [b for m in last if m["role"] == "user" for b in m["content"] if b["type"] == "tool_result"]
    assert replayed and [r["tool_use_id"] for r in results] == [b["id"] for b in replayed]
