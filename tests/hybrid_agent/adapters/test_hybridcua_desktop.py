"""HybridCUA end to end on the desktop: `hybrid-agent eval --adapter hybridcua --env-option enable_bash=true`.

A chat-completions server process answers in HybridCUA's format (``Action:`` line, several
``<tool_call><function=computer_use><parameter=...>`` blocks per reply); the real client,
adapter, agent loop, env bash channel, evaluator, metrics and report run. The heredoc click
must land on the 999 grid's point, the failing and succeeding commands must be counted as
HybridCUA counts them, and Table 3 must show the CLI step share and CLI error of the run.
"""

import csv
import json
import sys
from pathlib import Path

import pytest
from hybrid_agent.cli import main
from hybrid_agent.recorder import iter_episodes
from script_server import ScriptServers

sys.path.insert(0, str(Path(__file__).parents[2] / "osworld_mcp_env"))
from desktop_support import desktop_missing

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.skipif(
        desktop_missing() is not None, reason=f"embedded desktop unavailable: {desktop_missing()}"
    ),
]

CLICK = "python3 <<'PY'\nimport pyautogui\npyautogui.click(500, 300)\nprint('at', *pyautogui.position())\nPY"
CREATE = "mkdir -p ~/projects && printf 'Hello OSWorld\\n' > ~/projects/hello.txt"


def call(action: str, **parameters: str) -> str:
    body = "".join(
        f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in {"action": action, **parameters}.items()
    )
    return f"<tool_call>\n<function=computer_use>\n{body}</function>\n</tool_call>"


REPLIES = [
    "Action: Look at a path that does not exist, then at the home directory.\n"
    + call("bash", command="ls /nonexistent")
    + "\n"
    + call("bash", command="ls ~"),
    "Action: Click in the middle of the upper screen.\n" + call("bash", command=CLICK),
    "Action: Create the file, check it has no 'zzz', and finish.\n"
    + call("bash", command=CREATE)
    + "\n"
    + call("bash", command="grep zzz ~/projects/hello.txt")
    + "\n"
    + call("terminate", status="success"),
]


def completion(text: str) -> dict:
    message = {"role": "assistant", "content": text}
    usage = {"prompt_tokens": 3000, "completion_tokens": 60, "total_tokens": 3060}
    choice = {"index": 0, "message": message, "finish_reason": "stop"}
    body = {"id": "c", "object": "chat.completion", "created": 0, "model": "hybridcua", "choices": [choice]}
    return {"json": {**body, "usage": usage}}


def test_a_hybridcua_policy_runs_through_eval_and_table_3_counts_it(tmp_path, capsys):
    out = tmp_path / "run"
    with ScriptServers(tmp_path) as servers:
        url, log = servers.start([completion(text) for text in REPLIES])
        code = main(
            ["eval", "--suite", "os-create-file", "--policy", f"openai:{url}/v1#hybridcua",
             "--adapter", "hybridcua", "--env-option", "enable_bash=true", "--context", "hybridcua",
             "--retries", "0", "--out", str(out)]
        )  # fmt: skip
        bodies = log.bodies
    assert code == 0
    assert all("stop" not in body for body in bodies)  # several calls per reply: no stop string
    assert "0-999 grid" in bodies[0]["messages"][0]["content"]
    # The hybridcua context: turn 2 relays each command of turn 1 as its own CLI output.
    relayed = [p["text"] for p in bodies[1]["messages"][-1]["content"] if p["type"] == "text"]
    # stdout (empty), then stderr as HybridCUA's evaluation writes it: out + "\n[stderr]\n" + err
    assert relayed[0].startswith("CLI output:\n\n[stderr]\nls: cannot access '/nonexistent'")
    assert relayed[1].startswith("CLI output:\n") and "[exit code" not in relayed[1]
    (record,) = list(iter_episodes(out))
    assert record.end["score"] == 1.0 and record.end["claimed_success"] is True
    first, click, last = record.steps
    # Turn 1: two env steps, one record; ls /nonexistent exits 2 with stderr, ls ~ exits 0.
    assert first["action"]["name"] == "bash" and first["action"]["arguments"]["pyautogui_grid"] == 999
    assert (first["evidence"]["returncode"], bool(first["evidence"]["stderr"])) == (2, True)
    assert first["then"][0]["evidence"]["returncode"] == 0
    # Turn 2: the heredoc's click(500, 300) landed at (961, 324) on 1920x1080.
    assert "at 961 324" in last["tool_result_shown"]
    assert click["evidence"]["returncode"] == 0
    # Turn 3: grep's exit 1 with empty stderr; terminate is the third call of the reply.
    assert [t["evidence"] and t["evidence"]["returncode"] for t in last["then"]] == [1, None]
    assert main(["report", str(out)]) == 0
    capsys.readouterr()
    (row,) = list(csv.DictReader((out / "table3.csv").open()))
    # CLI: ls /nonexistent (failed), ls ~, mkdir+printf, grep = 4; GUI: the heredoc = 1; control excluded.
    assert row["CLI step share %"] == "80.0" and row["CLI error %"] == "25.0"
    assert row["avg steps (all tasks)"] == "6.0"  # 2 + 1 + 3 env steps
    (summary,) = json.loads((out / "summary.json").read_text())["runs"]
    assert summary["interfaces"]["cli_step_share"] == pytest.approx(0.8)
    assert summary["interfaces"]["by_domain"] == {"os": {"average_steps": 6, "cli_step_share": 0.8,
                                                         "cli_error_rate": 0.25}}  # fmt: skip
    print((out / "table3.md").read_text())
