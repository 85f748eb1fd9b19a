"""``replay:DIR``: the model outputs recorded in a run directory, played back step by step.

Replays what a model said (not what the env did): with the same env and the
same context settings, the run repeats; with other settings, it shows how the
same outputs fare. Outputs are looked up by (task, run), falling back to run 0
of the task; past the recorded steps the policy gives up (``terminate failure``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from hybrid_agent.errors import ConfigError
from hybrid_agent.policies.base import Generation, PolicyOptions, PolicyRequest, register_policy
from hybrid_agent.policies.scripted import GIVE_UP, render_call
from hybrid_agent.recorder import iter_episodes


class ReplayPolicy:
    """Plays back recorded model outputs."""

    concurrent = True  # a lookup per request: envs need not share a batch

    def __init__(
        self,
        outputs: Mapping[tuple[str, int], Sequence[Generation]],
        name: str,
        give_up: str = render_call(GIVE_UP),
    ) -> None:
        """Plays ``outputs``: each (task, run)'s replies in step order, then ``give_up``.

        :meth:`from_run` reads them from a run directory; :mod:`hybrid_agent.rewrite` gives
        rewritten replies directly, with a give-up reply in their own family's format.

        Raises:
            ConfigError: ``outputs`` is empty.
        """
        if not outputs:
            raise ConfigError(f"No outputs to replay for {name!r}.")
        self.outputs = {key: list(replies) for key, replies in outputs.items()}
        self.name = name
        self.give_up = give_up

    @classmethod
    def from_run(cls, run_dir: str | Path) -> ReplayPolicy:
        """Every finished episode of ``run_dir``'s outputs.

        Raises:
            ConfigError: The directory holds no finished episode.
        """
        outputs = {
            (record.task_id, record.run): [
                Generation(
                    text=step.get("model_output", ""),
                    input_tokens=(step.get("tokens") or {}).get("input"),
                    output_tokens=(step.get("tokens") or {}).get("output"),
                    tokens_estimated=bool((step.get("tokens") or {}).get("estimated")),
                    finish_reason=step.get("finish_reason"),  # a cut-off reply replays as cut off
                )
                for step in record.steps
            ]
            for record in iter_episodes(run_dir)
        }
        if not outputs:
            raise ConfigError(f"No finished episodes to replay in {str(run_dir)!r}.")
        return cls(outputs, f"replay:{Path(run_dir).name}")

    def generate(self, requests: Sequence[PolicyRequest]) -> list[Generation]:
        """The recorded output of each request's (task, run, step)."""
        out = []
        for request in requests:
            outputs = self.outputs.get((request.task_id, request.run)) or self.outputs.get(
                (request.task_id, 0)
            )
            if outputs is None or request.step >= len(outputs):
                out.append(Generation(text=self.give_up))
            else:
                out.append(outputs[request.step])
        return out


@register_policy("replay")
def _replay(rest: str, options: PolicyOptions) -> ReplayPolicy:
    if not rest:
        raise ConfigError("replay policy spec must be 'replay:DIR' (a run directory).")
    return ReplayPolicy.from_run(rest)
