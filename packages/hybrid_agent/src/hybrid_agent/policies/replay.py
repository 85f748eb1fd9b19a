"""``replay:DIR``: the model outputs recorded in a run directory, played back step by step.

Replays what a model said (not what the env did): with the same env and the
same context settings, the run repeats; with other settings, it shows how the
same outputs fare. Outputs are looked up by (task, run), falling back to run 0
of the task; past the recorded steps the policy gives up (``terminate failure``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from hybrid_agent.errors import ConfigError
from hybrid_agent.policies.base import Generation, PolicyOptions, PolicyRequest, register_policy
from hybrid_agent.policies.scripted import GIVE_UP, render_call
from hybrid_agent.recorder import iter_episodes


class ReplayPolicy:
    """Plays back recorded model outputs."""

    concurrent = True  # a lookup per request: envs need not share a batch

    def __init__(self, run_dir: str | Path) -> None:
        """Loads every finished episode of ``run_dir``.

        Raises:
            ConfigError: The directory holds no finished episode.
        """
        self.outputs: dict[tuple[str, int], list[Generation]] = {}
        for record in iter_episodes(run_dir):
            self.outputs[(record.task_id, record.run)] = [
                Generation(
                    text=step.get("model_output", ""),
                    input_tokens=(step.get("tokens") or {}).get("input"),
                    output_tokens=(step.get("tokens") or {}).get("output"),
                    tokens_estimated=bool((step.get("tokens") or {}).get("estimated")),
                    finish_reason=step.get("finish_reason"),  # a cut-off reply replays as cut off
                )
                for step in record.steps
            ]
        if not self.outputs:
            raise ConfigError(f"No finished episodes to replay in {str(run_dir)!r}.")
        self.name = f"replay:{Path(run_dir).name}"

    def generate(self, requests: Sequence[PolicyRequest]) -> list[Generation]:
        """The recorded output of each request's (task, run, step)."""
        out = []
        for request in requests:
            outputs = self.outputs.get((request.task_id, request.run)) or self.outputs.get(
                (request.task_id, 0)
            )
            if outputs is None or request.step >= len(outputs):
                out.append(Generation(text=render_call(GIVE_UP)))
            else:
                out.append(outputs[request.step])
        return out


@register_policy("replay")
def _replay(rest: str, options: PolicyOptions) -> ReplayPolicy:
    if not rest:
        raise ConfigError("replay policy spec must be 'replay:DIR' (a run directory).")
    return ReplayPolicy(rest)
