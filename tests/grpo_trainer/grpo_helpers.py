"""Builders for episodes with chosen calls and outcomes (no env, no model)."""

from __future__ import annotations

from grpo_trainer.rollouts.episode import Episode, StepSample
from hybrid_agent.trajectory import Call, Evidence, Frame, Observation

_FRAME = Frame.from_array(__import__("numpy").zeros((4, 4, 3), dtype="uint8"))


def sample(
    call: Call | None,
    exec_ok: bool = True,
    read_only: bool | None = None,
    index: int = 0,
    evidence: Evidence | None = None,
) -> StepSample:
    return StepSample(
        index=index,
        observation=Observation(_FRAME),
        tools=(),
        plan=[],
        past=index,
        prompt_ids=[1],
        response_ids=[2],
        old_logprobs=[-0.5],
        text="",
        call=call,
        exec_ok=exec_ok,
        read_only=read_only,
        evidence=evidence,
    )


def shell(command: str, returncode: int = 0, stderr: str = "", timed_out: bool = False, index: int = 0):
    """A ``bash`` step with the env's report of it (exit code, stderr, timeout)."""
    evidence = Evidence(exec_ok=not timed_out, returncode=returncode, stderr=stderr, timed_out=timed_out)
    call = Call("bash", {"command": command})
    return sample(call, exec_ok=evidence.exec_ok, index=index, evidence=evidence)


def episode(
    score: float | None, samples: list[StepSample], labels: dict | None = None, crash=None
) -> Episode:
    return Episode("t", 0, 0, "do it", samples=samples, score=score, crash=crash, labels=labels or {})


def gui(action: str = "left_click") -> Call:
    return Call("computer_use", {"action": action})


def tool(name: str = "calc.set_cell", **arguments) -> Call:
    return Call(name, arguments)
