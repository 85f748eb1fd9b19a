"""G rollouts of one task over a group vector env, recording every model call as a sample.

Each turn is ``hybrid_agent``'s :class:`~hybrid_agent.agent_loop.AgentLoop`, the
turn evaluation takes: the same tools shown (BM25 top-k), the same context, the
same reading of the reply (a cut-off reply or a call inside unfinished reasoning
executes nothing), the same coordinates. What rollouts add is the vector env (the
loop's ``observe``/``decide`` for every live member, one ``venv.step``, then
``advance``) and the sample: the prompt ids and multimodal inputs the policy saw,
the response ids and their log-probabilities, stored as the truth training uses.
:func:`rebuild_messages` replays the stored retention plan; the trainer's replay
check (``engine.replay_check``) compares it with the stored ids.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
from hybrid_agent.agent_loop import NO_OP_ACTION, AgentConfig, AgentEpisode, AgentLoop
from hybrid_agent.context import ContextConfig, build_context
from hybrid_agent.messages import Message
from hybrid_agent.policies.base import Generation, PolicyRequest
from hybrid_agent.retention import RetentionPlan
from osworld_mcp_env.tasks.templates import task_labels

from grpo_trainer.episode import Episode, StepSample
from grpo_trainer.errors import GRPOError
from grpo_trainer.policy import AgentPolicy, TrainablePolicy, VersionedPolicy
from grpo_trainer.vector import held_info


@dataclass(frozen=True)
class RolloutConfig:
    """How rollouts are produced.

    Attributes:
        group_size: G, rollouts per task from one start state.
        temperature: Sampling temperature of the rollout policy.
        agent: What the model is shown and how its reply is read (evaluation's type and defaults).
    """

    group_size: int = 8
    temperature: float = 1.0
    agent: AgentConfig = field(default_factory=AgentConfig)

    @property
    def context(self) -> ContextConfig:
        """The context builder settings rollouts use (a trainable policy gets the tools in its prompt)."""
        return self.agent.context_config()


def _row(batch: dict[str, Any], i: int) -> dict[str, Any]:
    return {key: value[i] for key, value in batch.items()}


def _info_row(infos: dict[str, Any], i: int) -> dict[str, Any]:
    """Env ``i``'s info from Gymnasium's stacked dict-of-arrays (masks ``_key`` say who set a key)."""
    out = {}
    for key, value in infos.items():
        if key.startswith("_"):
            continue
        if not infos.get(f"_{key}", [True] * (i + 1))[i]:
            continue
        out[key] = _info_row(value, i) if isinstance(value, dict) else value[i]
    return out


def rebuild_messages(episode: Episode, sample: StepSample, context: ContextConfig) -> list[Message]:
    """The messages of ``sample``'s context, rebuilt from the episode record and its stored plan."""
    return build_context(
        episode.steps[: sample.past],
        sample.observation,
        episode.instruction,
        sample.tools,
        context,
        plan=RetentionPlan.from_dicts(sample.plan),
    ).messages


def collect_group(
    venv: gym.vector.VectorEnv,
    policy: TrainablePolicy | VersionedPolicy,
    task: Any,
    seed: int,
    group: int,
    config: RolloutConfig,
    generator: Any,
    policy_version: int = 0,
    reset_options: dict[str, Any] | None = None,
    generate: Callable[[Sequence[PolicyRequest]], list[Generation]] | None = None,
) -> list[Episode]:
    """Runs the G envs of ``venv`` on ``task`` from one seed until every episode ended.

    Args:
        venv: A group env from :func:`grpo_trainer.vector.make_group_env`.
        policy: The rollout policy; a :class:`VersionedPolicy` stamps each step with the version
            of the weights that produced it (they may change between steps in async mode).
        task: The task id or config passed as ``options["task"]``.
        seed: The start state; every member gets it.
        group: The group id stamped on the episodes.
        config: Rollout settings.
        generator: The ``torch.Generator`` used for sampling.
        policy_version: The version of a plain ``policy``'s weights (for staleness).
        reset_options: Extra reset options (a per-group crash for tests; ``labels`` adds to or
            replaces the task's own labels, :func:`osworld_mcp_env.tasks.templates.task_labels`).
        generate: Answers the live members' requests; by default one batched call of the policy.
            Continuous batching (:mod:`grpo_trainer.continuous`) passes its dispatcher, which
            batches them with other envs' pending requests.

    Returns:
        G episodes; a crashed one has ``crash`` set and no score.
    """
    rollout = policy if isinstance(policy, VersionedPolicy) else VersionedPolicy(policy, policy_version)
    agent = AgentPolicy(rollout, "rollout", config.temperature, generator)
    answer = generate if generate is not None else agent.generate
    loop = AgentLoop(config.agent, agent)
    n = venv.num_envs
    # One seed per member: Sync/AsyncVectorEnv take a list, the base class types only an int.
    seeds = [seed] * n
    obs, infos = venv.reset(seed=seeds, options={"task": task, **(reset_options or {})})  # type: ignore[arg-type]
    # A seeded template labels its tasks (preferred_interface); reset options' labels override.
    labels = {**task_labels(task), **(reset_options or {}).get("labels", {})}
    states = [AgentEpisode.start(str(task), i, _row(obs, i), _info_row(infos, i)) for i in range(n)]
    episodes = [Episode(str(task), group, i, states[i].instruction, labels=labels) for i in range(n)]
    for state, episode in zip(states, episodes, strict=True):
        episode.steps = state.steps  # the loop appends each executed step; the episode keeps them
    active = [True] * n
    for i in range(n):
        crash = held_info(states[i].info).get("crash")
        if crash:
            episodes[i].crash, active[i] = crash, False
    while any(active):
        live = [i for i in range(n) if active[i]]
        turns = {i: loop.observe(states[i]) for i in live}
        generations = dict(zip(live, answer([turns[i].request for i in live]), strict=True))
        decisions = {i: loop.decide(turns[i], generations[i]) for i in live}
        actions = [NO_OP_ACTION] * n
        for i in live:
            action = decisions[i].action
            if action is None:  # a trainable policy answers every request
                raise GRPOError(f"The rollout policy gave no answer: {generations[i].error}")
            actions[i] = json.dumps(action) if isinstance(action, dict) else action
        obs, _, _, _, infos = venv.step(tuple(actions))
        for i in live:
            info = _info_row(infos, i)
            typed = held_info(info)
            ended = bool(typed.get("ended"))
            # The group env holds the end in info; the loop reads it as env.step would give it.
            result = (_row(obs, i), typed.get("score", 0.0), ended, False, info)
            outcome = loop.advance(states[i], turns[i], decisions[i], result, {})
            trace = generations[i].trace
            assert trace is not None  # AgentPolicy always attaches one
            turn, episode = turns[i], episodes[i]
            episode.samples.append(
                StepSample(
                    index=len(episode.samples),
                    observation=turn.observation,
                    tools=turn.tools,
                    plan=turn.plan,
                    past=turn.past,
                    prompt_ids=trace.prompt_ids,
                    response_ids=trace.response_ids,
                    old_logprobs=trace.logprobs,
                    text=decisions[i].text,
                    call=outcome.call,
                    exec_ok=outcome.exec_ok,
                    read_only=outcome.evidence.read_only if outcome.evidence is not None else None,
                    policy_version=trace.version,
                    finish_reason=generations[i].finish_reason,
                    evidence=outcome.evidence,
                )
            )
            if ended:
                active[i] = False
                episode.crash = typed.get("crash")
                episode.truncated = bool(typed.get("truncated"))
                episode.score = None if episode.crash else typed.get("score")
    return episodes
