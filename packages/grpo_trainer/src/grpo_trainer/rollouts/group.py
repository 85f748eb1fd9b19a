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
from hybrid_agent.agent_loop import NO_OP_ACTION, AgentConfig, AgentEpisode, AgentLoop, Decision, Outcome
from hybrid_agent.context import ContextConfig, build_context
from hybrid_agent.messages import Message
from hybrid_agent.policies.base import Generation, PolicyRequest
from hybrid_agent.retention import RetentionPlan
from osworld_mcp_env.tasks.templates import task_labels

from grpo_trainer.errors import GRPOError
from grpo_trainer.model.policy import AgentPolicy, TrainablePolicy, VersionedPolicy
from grpo_trainer.rollouts.episode import Episode, StepSample
from grpo_trainer.rollouts.vector import HOLD_ACTION, HeldInfo, held_info


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


def _result(
    obs: dict[str, Any], info: dict[str, Any], i: int
) -> tuple[Any, float, bool, bool, dict[str, Any]]:
    """Member ``i``'s step as ``env.step`` would give it (the group env holds the end in ``info``)."""
    typed = held_info(info)
    return _row(obs, i), float(typed.get("score", 0.0)), bool(typed.get("ended")), False, info


def _follow_ups(
    venv: gym.vector.VectorEnv,
    loop: AgentLoop,
    states: list[AgentEpisode],
    decisions: dict[int, Decision],
    outcomes: dict[int, Outcome],
    ends: dict[int, HeldInfo],
) -> None:
    """Runs the further calls of the replies (HybridCUA's several per turn), one env step each.

    Each round steps every member that still has a call; the others hold (:data:`HOLD_ACTION`,
    no step of theirs). A member stops at its episode's end. ``outcomes`` and ``ends`` are updated.
    """
    queues = {i: list(decisions[i].follow_ups) for i in outcomes if not ends[i].get("ended")}
    queues = {i: queue for i, queue in queues.items() if queue}
    done = dict.fromkeys(queues, 0)
    while queues:
        actions = [HOLD_ACTION] * venv.num_envs
        for i, queue in queues.items():
            actions[i] = json.dumps({"name": queue[0].call.name, "arguments": queue[0].call.arguments})
        obs, _, _, _, infos = venv.step(tuple(actions))
        for i in list(queues):
            follow = queues[i].pop(0)
            info = _info_row(infos, i)
            outcomes[i] = loop.advance_follow_up(
                states[i], outcomes[i], done[i], follow, _result(obs, info, i), 0.0
            )
            ends[i], done[i] = held_info(info), done[i] + 1
            if ends[i].get("ended") or not queues[i]:
                del queues[i]


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
        venv: A group env from :func:`grpo_trainer.rollouts.vector.make_group_env`.
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
            Continuous batching (:mod:`grpo_trainer.rollouts.continuous`) passes its dispatcher, which
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
        outcomes, ends = {}, {}
        for i in live:
            info = _info_row(infos, i)
            # The group env holds the end in info; the loop reads it as env.step would give it.
            outcomes[i] = loop.advance(states[i], turns[i], decisions[i], _result(obs, info, i), {})
            ends[i] = held_info(info)
        _follow_ups(venv, loop, states, decisions, outcomes, ends)
        for i in live:
            outcome, typed = outcomes[i], ends[i]
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
                    more=outcome.more,
                )
            )
            if typed.get("ended"):
                active[i] = False
                episode.crash = typed.get("crash")
                episode.truncated = bool(typed.get("truncated"))
                episode.score = None if episode.crash else typed.get("score")
    return episodes
