"""The tool host reads the worker as untrusted: real child processes that misbehave, bounded records."""

from __future__ import annotations

import subprocess
import sys

import pytest
from osworld_mcp_env.ax.batch import BatchRunner, parse_steps
from osworld_mcp_env.ax.link import MAX_REPLY_BYTES, WorkerFault, WorkerLink
from osworld_mcp_env.ax.records import UntrustedAnswer, parse_records, supported_ops
from polling import wait_until

READY = 'import sys; sys.stdout.write(\'{"ok": true, "ready": true}\\n\'); sys.stdout.flush(); '


def link_running(body: str) -> WorkerLink:
    """A link whose "worker" is a real Python child that says ready, then runs ``body``."""

    def start(argv):
        return subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True)

    return WorkerLink(start, argv=lambda first: [sys.executable, "-c", READY + body])


def test_an_answer_past_the_bound_kills_the_worker_and_fails_the_request():
    link = link_running(
        f"sys.stdin.readline(); sys.stdout.write('x' * {MAX_REPLY_BYTES + 10}); sys.stdout.flush()"
    )
    with pytest.raises(WorkerFault, match="passed"):
        link.request({"cmd": "ping"}, timeout_s=20)
    assert link.pid is None


def test_a_silent_worker_is_stopped_at_the_deadline_and_the_next_request_starts_a_new_one():
    link = link_running("import time; sys.stdin.readline(); time.sleep(60)")
    with pytest.raises(WorkerFault, match="in time") as caught:
        link.request({"cmd": "ping"}, timeout_s=0.5)
    assert caught.value.sent and link.pid is None and link.generation == 1
    with pytest.raises(WorkerFault):
        link.request({"cmd": "ping"}, timeout_s=0.5)
    assert link.generation == 2


def test_refs_keep_counting_across_worker_restarts():
    link = link_running(
        'sys.stdin.readline(); sys.stdout.write(\'{"ok": true, "next_ref": 41}\\n\'); sys.stdout.flush()'
    )
    assert link.request({"cmd": "ping"}, timeout_s=10)["ok"]
    assert link.next_ref == 41
    link.close()


@pytest.mark.parametrize(
    "bad",
    [
        "not a list",
        [{"ref": "x1"}],
        [{"ref": "e1", "pid": "7"}],
        [dict.fromkeys(["ref", "window"], "e1") | {"pid": 1, "start": 1, "path": [0] * 500}],
    ],
)
def test_a_malformed_record_rejects_the_whole_answer(bad):
    with pytest.raises(UntrustedAnswer):
        parse_records(bad)


def test_a_long_name_is_cut_and_an_unknown_operation_dropped():
    raw = {
        "ref": "e5", "pid": 7, "start": 9, "window": "e1", "path": [0, 2], "role": "push button",
        "name": "N" * 10_000, "states": ["enabled"], "bounds": [1, 2, 3, 4], "ops": ["press", "format_disk"],
        "children": [],
    }  # fmt: skip
    (rec,) = parse_records([raw])
    assert len(rec.name) == 200 and rec.ops == ["press"]


def test_a_push_button_with_a_value_interface_offers_no_set_value():
    ops = supported_ops(
        "push button", frozenset({"Action", "Component", "Value"}), frozenset({"focusable"}), False
    )
    assert "set_value" not in ops and {"press", "click", "focus"} <= set(ops)
    assert "set_value" in supported_ops("slider", frozenset({"Value"}), frozenset(), False)


# Answers every request with no records; exits after its third answer.
ANSWERS_THREE = (
    '[(sys.stdin.readline(), sys.stdout.write(\'{"ok": true, "records": []}\\n\'), sys.stdout.flush())'
    " for _ in range(3)]"
)


def test_a_request_pinned_to_a_dead_worker_fails_and_an_unpinned_one_starts_anew():
    link = link_running(ANSWERS_THREE)
    for _ in range(3):
        assert link.request({"cmd": "windows"}, timeout_s=10, generation=None if _ == 0 else 1)["ok"]
    assert link.generation == 1
    wait_until(lambda: link.pid is None, what="the worker's exit after its third answer")
    with pytest.raises(WorkerFault, match="died during the batch") as caught:
        link.request({"cmd": "windows"}, timeout_s=10, generation=1)
    assert not caught.value.sent and link.generation == 1
    assert link.request({"cmd": "windows"}, timeout_s=10)["ok"] and link.generation == 2
    link.close()


def test_a_worker_that_dies_between_a_waits_polls_stops_the_batch_as_a_desktop_error():
    link = link_running(ANSWERS_THREE)  # the windows listing, then two polls of the wait
    steps = parse_steps([{"wait": "query", "name": "never there", "timeout_s": 20}])
    result = BatchRunner(link, deadline_s=None).run(steps)
    assert result.error is not None and result.stopped_at == 0
    assert result.error["code"] == "desktop_error" and result.error["input_events_emitted"] is False
    assert link.generation == 1  # no worker was started in its place during the batch
    link.close()
