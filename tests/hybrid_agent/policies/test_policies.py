"""Policy registry, scripted / replay / custom policies, context names, the evidence converter."""

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hybrid_agent.errors import ConfigError, RegistryError
from hybrid_agent.evidence import evidence_from_info
from hybrid_agent.parse import ParsedAction, parse_response
from hybrid_agent.policies import PolicyRequest, make_policy
from hybrid_agent.presets import retention_from_name
from hybrid_agent.recorder import EpisodeWriter
from hybrid_agent.suite import load_suite
from hybrid_agent.trajectory import Call, Evidence
from osworld_mcp_env.info import ToolCallRecord
from osworld_mcp_env.tasks import bundled_solution, load_task


@pytest.mark.parametrize("variant", ["oracle", "wrong"])
def test_scripted_text_parses_back_to_the_solution(variant):
    policy = make_policy(f"scripted:{variant}")
    script = bundled_solution("calc-sum-column", variant)
    requests = [PolicyRequest([], task_id="calc-sum-column", step=i) for i in range(len(script) + 1)]
    calls = []
    for gen in policy.generate(requests):
        parsed = parse_response(gen.text)
        assert isinstance(parsed, ParsedAction) and parsed.repairs == () and gen.tokens_estimated
        calls.append({"name": parsed.call.name, "arguments": parsed.call.arguments})
    assert calls[:-1] == script
    assert calls[-1]["arguments"] == {"action": "terminate", "status": "failure"}  # past the script: give up


def test_replay_plays_back_recorded_outputs(tmp_path):
    with ThreadPoolExecutor(1) as pool:
        writer = EpisodeWriter(tmp_path, "t1", 1, {"task_id": "t1", "run": 1}, pool)
        writer.step({"step": 0, "model_output": "first", "tokens": {"input": 5, "output": 1}}, None)
        writer.finish({"score": 0.0})
    policy = make_policy(f"replay:{tmp_path}")
    out = policy.generate(
        [PolicyRequest([], task_id="t1", run=1, step=0), PolicyRequest([], task_id="t1", run=1, step=1)]
    )
    assert out[0].text == "first" and out[0].input_tokens == 5
    assert "terminate" in out[1].text
    with pytest.raises(ConfigError, match="No finished episodes"):
        make_policy(f"replay:{tmp_path / 'empty'}")


def test_custom_policy_by_import_path_and_unknown_kinds(monkeypatch):
    monkeypatch.syspath_prepend(str(Path(__file__).parents[3]))  # the CLI puts the cwd there
    policy = make_policy("examples.custom_policy:WaitThenGiveUp")
    first, second = policy.generate([PolicyRequest([], step=0), PolicyRequest([], step=1)])
    assert parse_response(first.text).call.arguments == {"action": "wait", "time": 1}
    assert parse_response(second.text).call.arguments["action"] == "terminate"
    with pytest.raises(RegistryError, match=r"Unknown policy kind 'opena'\. Did you mean 'openai'"):
        make_policy("opena:http://x#m")
    with pytest.raises(ConfigError, match="Cannot import"):
        make_policy("no_such_module.sub:Cls")
    with pytest.raises(ConfigError, match="openai:URL#MODEL"):
        make_policy("openai:http://x")


def test_context_names_compose_registered_rules():
    assert retention_from_name("win4").window == 4 and retention_from_name("win4").rules == ()
    config = retention_from_name("win2+drop+skip")
    assert (config.window, config.rules) == (2, ("drop_on_success", "skip_identical"))
    assert retention_from_name("all+downscale").window is None
    with pytest.raises(ConfigError, match="must start with"):
        retention_from_name("window4")
    with pytest.raises(RegistryError, match="Unknown retention rule 'dropp'"):
        retention_from_name("win2+dropp")


def tool_call(**fields) -> ToolCallRecord:
    """A complete record of an executed MCP call; ``fields`` override."""
    return ToolCallRecord(
        **{
            "name": "libreoffice_calc.replace",
            "arguments": {},
            "exec_ok": True,
            "effect": None,
            "read_only": None,
            "in_catalog": True,
            "dispatched": True,
            "returncode": None,
            "stderr": None,
            "timed_out": False,
            "latency_ms": 1.0,
            **fields,
        }
    )


def test_evidence_converter_reads_the_envs_tool_call_record():
    call = Call("libreoffice_calc.replace", {})
    changed = {"tool_call": tool_call(read_only=False, effect={"kind": "changed", "count": 3})}
    assert evidence_from_info(call, changed) == Evidence(True, 3, "changed", False)
    nothing = {"tool_call": tool_call(effect={"kind": "none", "count": 0})}
    assert evidence_from_info(call, nothing).effect == 0
    unknown = {"tool_call": tool_call(effect={"kind": "unknown", "changed": None})}
    assert evidence_from_info(call, unknown).effect is None
    refused = {"error": {"code": "unknown_tool", "message": "x"}}
    assert evidence_from_info(call, refused) == Evidence(False, error_code="unknown_tool")
    failed = {"tool_call": tool_call(exec_ok=False), "error": {"code": "tool_error"}}
    assert evidence_from_info(call, failed) == Evidence(False, None, None, None, "tool_error")
    # A bash call has the same record: no effect, read-only unknown; exit code and stderr apart.
    bash = {"tool_call": tool_call(name="bash", effect=None, in_catalog=False, returncode=2, stderr="no")}
    read = evidence_from_info(Call("bash", {"command": "ls /x"}), bash)
    assert read == Evidence(True, None, None, None, returncode=2, stderr="no")
    assert read.command_failed
    assert evidence_from_info(Call("computer_use", {"action": "wait"}), changed) is None


def test_scripted_tools_plays_the_tool_route_where_there_is_one():
    policy = make_policy("scripted:tools")
    for task_id, expected in (
        ("calc-column-sum@2", bundled_solution("calc-column-sum@2", "tools")),
        ("calc-sum-column", bundled_solution("calc-sum-column", "tools")),
        ("os-write-file", bundled_solution("os-write-file", "oracle")),  # not tool-reachable
    ):
        first = parse_response(policy.generate([PolicyRequest([], task_id=task_id, step=0)])[0].text)
        assert isinstance(first, ParsedAction)
        assert {"name": first.call.name, "arguments": first.call.arguments} == expected[0], task_id
    assert bundled_solution("calc-column-sum@2", "tools")[0]["name"] == "libreoffice_calc.set_cell_value"


def test_scripted_ax_cites_the_refs_its_finds_were_shown_and_gives_up_without_one():
    policy = make_policy("scripted:ax")
    task = "writer-insert-title@2"  # find the first paragraph, then one act keyed at its ref

    def call_at(step, tool_result, run=0):
        turn = [
            {"type": "text", "text": f"Tool result: {tool_result}"},
            {"type": "text", "text": "Task: ..."},
        ]
        messages = [{"role": "user", "content": turn}] if tool_result is not None else []
        text = policy.generate([PolicyRequest(messages, task_id=task, run=run, step=step)])[0].text
        parsed = parse_response(text)
        assert isinstance(parsed, ParsedAction)
        return parsed.call

    first = call_at(0, None)
    assert (first.name, first.arguments) == (
        "ax.find",
        {"role": "paragraph", "text": "Dear Alice,", "limit": 1},
    )
    shown = 'Read: 1 match(es):\nparagraph [e37] = \'Dear Alice,\' editable\n{"refs": ["e37"]}'
    act = call_at(1, shown)
    assert act.name == "ax.act" and act.arguments["steps"][0] == {
        "op": "key",
        "ref": "e37",
        "keys": "ctrl+Home",
    }
    call_at(0, None, run=1)  # another episode of the same task: its own bindings
    gave_up = call_at(1, "Read: No element matches.", run=1)
    assert gave_up.arguments == {"action": "terminate", "status": "failure"}


def test_seeded_suites_resolve_to_loadable_task_files():
    every = load_suite("seeded")
    test, train = load_suite("seeded:test"), load_suite("seeded:train")
    assert len(every) >= 60 and len(test) + len(train) == len(every)
    assert {t.task_id for t in test} | {t.task_id for t in train} == {t.task_id for t in every}
    assert load_task(test[0].source).id == test[0].task_id
    with pytest.raises(ConfigError, match="not 'train' or 'test'"):
        load_suite("seeded:dev")
