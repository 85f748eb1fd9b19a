"""G rollouts of one task over a group vector env, recording every model call as a sample.

Per step, for each env still running: the context is built by ``hybrid_agent``'s
builder (the same code the evaluation runner uses), encoded by the policy, and the
sampled response is parsed with ``hybrid_agent``'s parser. A response that does not
parse is a sample too (the env gets a refused empty action, the parser's message is
the next tool result, and it does not enter the context's past steps), exactly as
in evaluation. :func:`rebuild_messages` replays the stored retention plan, so
training sees the context the policy saw.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
from hybrid_agent.context import ContextConfig, build_context
from hybrid_agent.coords import CoordinateConfig, call_to_screen
from hybrid_agent.evidence import evidence_from_info
from hybrid_agent.messages import Message
from hybrid_agent.parse import ParseError, parse_response
from hybrid_agent.retention import RetentionPlan
from hybrid_agent.toolset import tools_from_env
from hybrid_agent.trajectory import Frame, Observation, Step

from grpo_trainer.episode import Episode, StepSample
from grpo_trainer.policy import TrainablePolicy, VersionedPolicy
from grpo_trainer.vector import held_info

REFUSED_ACTION = ""  # what an unparsable output sends: refused by the env, counted as a step


@dataclass(frozen=True)
class RolloutConfig:
    """How rollouts are produced.

    Attributes:
        group_size: G, rollouts per task from one start state.
        temperature: Sampling temperature of the rollout policy.
        context: The context-builder settings (window, retention, prompt).
        coordinates: How the model's GUI coordinates map to screen pixels.
    """

    group_size: int = 8
    temperature: float = 1.0
    context: ContextConfig = field(default_factory=ContextConfig)
    coordinates: CoordinateConfig = field(default_factory=CoordinateConfig)


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
        reset_options: Extra reset options (a per-group crash for tests, task labels).

    Returns:
        G episodes; a crashed one has ``crash`` set and no score.
    """
    rollout = policy if isinstance(policy, VersionedPolicy) else VersionedPolicy(policy, policy_version)
    n = venv.num_envs
    # One seed per member: Sync/AsyncVectorEnv take a list, the base class types only an int.
    seeds = [seed] * n
    obs, infos = venv.reset(seed=seeds, options={"task": task, **(reset_options or {})})  # type: ignore[arg-type]
    first = [_row(obs, i) for i in range(n)]
    labels = dict((reset_options or {}).get("labels", {}))
    episodes = [Episode(str(task), group, i, first[i]["instruction"], labels=labels) for i in range(n)]
    state = [(first[i], _info_row(infos, i), "") for i in range(n)]
    active = [True] * n
    for i in range(n):
        crash = held_info(state[i][1]).get("crash")
        if crash:
            episodes[i].crash, active[i] = crash, False
    while any(active):
        live = [i for i in range(n) if active[i]]
        pending = {}
        for i in live:
            o, info, feedback = state[i]
            tools = tuple(tools_from_env(held_info(info).get("tools") or []))
            current = Observation(Frame.from_array(o["screenshot"]), feedback or o["tool_result"])
            ctx = build_context(episodes[i].steps, current, episodes[i].instruction, tools, config.context)
            pending[i] = (current, tools, ctx.plan.to_dicts(), rollout.encode(ctx.messages))
        outputs, version = rollout.sample([pending[i][3] for i in live], config.temperature, generator)
        actions = [REFUSED_ACTION] * n
        parsed_by_env = {}
        for i, out in zip(live, outputs, strict=True):
            parsed = parse_response(out.text, pending[i][1])
            parsed_by_env[i] = parsed
            if not isinstance(parsed, ParseError):
                height, width = state[i][0]["screenshot"].shape[:2]
                sent = call_to_screen(parsed.call, (width, height), config.coordinates)
                actions[i] = json.dumps({"name": sent.name, "arguments": sent.arguments})
        obs, _, _, _, infos = venv.step(tuple(actions))
        for i, out in zip(live, outputs, strict=True):
            info = _info_row(infos, i)
            typed = held_info(info)
            current, tools, plan, prompt_ids = pending[i]
            parsed = parsed_by_env[i]
            episode = episodes[i]
            call = None if isinstance(parsed, ParseError) else parsed.call
            evidence = evidence_from_info(call, info) if call is not None else None
            exec_ok = call is not None and not typed.get("error") and (evidence is None or evidence.exec_ok)
            episode.samples.append(
                StepSample(
                    index=len(episode.samples),
                    observation=current,
                    tools=tools,
                    plan=plan,
                    past=len(episode.steps),
                    prompt_ids=prompt_ids,
                    response_ids=out.ids,
                    old_logprobs=out.logprobs,
                    text=out.text,
                    call=call,
                    exec_ok=exec_ok,
                    read_only=evidence.read_only if evidence is not None else None,
                    policy_version=version,
                )
            )
            if call is not None:
                episode.steps.append(Step(current.frame, current.tool_result, out.text, call, evidence))
            feedback = parsed.render() if isinstance(parsed, ParseError) else ""
            state[i] = (_row(obs, i), info, feedback)
            if typed.get("ended"):
                active[i] = False
                episode.crash = typed.get("crash")
                episode.truncated = bool(typed.get("truncated"))
                episode.score = None if episode.crash else typed.get("score")
    return episodes
