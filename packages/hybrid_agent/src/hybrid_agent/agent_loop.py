"""One turn of the agent, written once: context -> policy -> parse -> coordinates -> env -> evidence.

The evaluation runner (:mod:`hybrid_agent.runner`), the trainer's rollouts
(``grpo_trainer.rollouts.group``) and the trainer's probes all take their steps through
:class:`AgentLoop`, so what a model sees and how its reply is read cannot drift
between evaluation and training. A turn has three parts, split where a caller may
batch or vectorise:

1. :meth:`AgentLoop.observe`: the tools shown (BM25 top-k of the focused app's tools,
   or all of them), the context (window, retention, the one-line history) and the
   :class:`~hybrid_agent.policies.base.PolicyRequest`;
2. :meth:`AgentLoop.decide`: the model's reply read into the action the env gets;
3. :meth:`AgentLoop.advance`: the env's answer folded into the episode (evidence,
   history, the feedback of the next turn) and the step's record.

:meth:`AgentLoop.step` runs 2-3 around one ``env.step`` (the runner); the trainer
calls them around one ``venv.step`` for a whole group.

A reply means what it says, or nothing:

* a reply the output budget cut off (``finish_reason == "length"``) executes nothing:
  the env gets the refused empty action (a counted step, as for any malformed reply),
  the step is recorded as ``truncated`` with the raw text, and the model is told;
* a call inside unfinished reasoning is never executed
  (:func:`hybrid_agent.parse.unfinished_reasoning`);
* reasoning a server returned apart (``reasoning_content``) is put back in front of
  the content as ``<think>...</think>``, so it is recorded, parsed past and shown
  again with ``keep_think`` as the model's own text would be.

What the model is shown and how its reply is read belong to the model family's
adapter (:mod:`hybrid_agent.adapters`, ``AgentConfig.adapter``): its prompt states the
coordinate space the mapping uses, its screenshots are resized by the family's rule,
its parser returns the call in screen pixels or a typed error (``out_of_space`` for a
point outside the space). With ``parse_retries`` a malformed reply is re-sampled up to
that many times; every failed attempt stays in the step record (``parse_attempts``).
"""

from __future__ import annotations

import dataclasses
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, SupportsFloat

import gymnasium as gym
from osworld_mcp_env.actions import cited_points
from osworld_mcp_env.info import step_info
from osworld_mcp_env.mcp_host.namespaces import AX
from osworld_mcp_env.zoom import ZoomView

from hybrid_agent.adapters import DEFAULT_ADAPTER, AdapterOptions, ModelAdapter, get_adapter, reply_text
from hybrid_agent.context import ContextConfig, build_context
from hybrid_agent.coords import CoordinatePolicy
from hybrid_agent.errors import ConfigError
from hybrid_agent.evidence import evidence_from_info, window_changes_from_info
from hybrid_agent.interface_mode import INTERFACE_MODES, refused_calls
from hybrid_agent.parse import ParsedAction, ParseError, ParseErrorCode, ParseResult
from hybrid_agent.policies.base import Generation, Policy, PolicyRequest, preferred_coordinates
from hybrid_agent.presets import context_policy
from hybrid_agent.prompt import PromptConfig
from hybrid_agent.retrieval import BM25Retriever, RetrievalConfig
from hybrid_agent.toolset import ToolSpec, tools_from_env
from hybrid_agent.trajectory import Call, Evidence, Executed, Frame, Observation, Step
from hybrid_agent.zoom import unzoom_call

# A refused, undispatched action: what a reply that executes nothing costs the env (one counted step).
NO_OP_ACTION = ""

Resample = Callable[[PolicyRequest], Generation]
"""Answers one request again (the runner's dispatcher), for parse repair."""

# What a failed parse attempt keeps in the step record.
_ATTEMPT_KEYS = ("model_output", "finish_reason", "tokens", "parse")

TRUNCATED_FEEDBACK = (
    "Error [truncated]: your reply reached the output limit before it ended, so nothing was "
    "executed. Reason more briefly and end with one <tool_call>."
)


@dataclass(frozen=True)
class AgentConfig:
    """What the model is shown and how its reply is read: one type for evaluation and training.

    The eval CLI (``hybrid-agent eval``) and the trainer config (``[agent]``) both fill it;
    the defaults are the study's.

    Attributes:
        context: Context policy name (``win4``, ``win2+drop``, ``hybridcua``; :mod:`hybrid_agent.presets`).
        retrieval: Rank the focused app's tools with BM25 (top ``top_k`` + always-include);
            off shows every tool of the app.
        top_k: BM25 top-k (the study: 18).
        gui_only: Offer no tools.
        keep_think: Show past reasoning inside the window.
        thinking: The model runs in Thinking mode (its chat template opens ``<think>``):
            a reply without ``</think>`` never finished reasoning and executes nothing.
        tool_result_chars: L, the characters of a relayed tool result (a named context policy
            may fix its own: ``hybridcua`` cuts each command's output at 1,000).
        coordinates: Override the adapter's coordinate space; ``None``: the policy's own
            (the scripted policy emits screen pixels), else the adapter's.
        adapter: The model family (:func:`hybrid_agent.adapters.adapter_names`): its prompt,
            reply format, coordinate space and screenshot rule.
        min_pixels: Override the adapter's smallest resized screenshot area (``None``: the family's).
        max_pixels: Override the adapter's largest resized screenshot area (``None``: the family's).
        skill_text: Teach the interface in the system prompt (:mod:`hybrid_agent.skill`):
            on in the ``hcu`` setting, off in the study's.
        cite_frames: Show the screenshot's frame id and send it (``frame_id``) with every
            action that cites a point, so the env's stale-frame guard (on by default)
            refuses coordinates read from a layout that has since changed where they point.
        zoom: Offer the graphical ``zoom`` (``computer_use``'s enum and the parser, through the
            adapter): on in the ``hcu`` setting, off in the study's. Whatever it says, a reply
            to a zoomed observation has its points mapped back to the screen
            (:mod:`hybrid_agent.zoom`) and cites the zoom's parent frame.
        parse_retries: Re-sample a malformed reply up to this many times before the step
            counts as malformed. 0 by default: the study counts every malformed reply as a
            step, and greedy decoding would only repeat it; harnesses that repair by
            re-sampling (at temperature > 0) use 5. The evaluation runner applies it; training
            rollouts keep every reply as sampled.
        interface: ``hybrid`` (every call), ``gui`` (GUI steps only) or ``cli`` (CLI steps only);
            control actions always pass, a refused call is the typed error ``interface_refused``
            (:mod:`hybrid_agent.interface_mode`).
    """

    context: str = "win4"
    retrieval: bool = True
    top_k: int = 18
    gui_only: bool = False
    keep_think: bool = False
    thinking: bool = False
    tool_result_chars: int = 1500
    coordinates: str | None = None
    adapter: str = DEFAULT_ADAPTER
    min_pixels: int | None = None
    max_pixels: int | None = None
    parse_retries: int = 0
    interface: str = "hybrid"
    cite_frames: bool = True
    skill_text: bool = False
    zoom: bool = False

    def __post_init__(self) -> None:
        if self.interface not in INTERFACE_MODES:
            raise ConfigError(f"interface must be one of {INTERFACE_MODES}, got {self.interface!r}.")
        context_policy(self.context)  # a bad name fails here, not after the first reset
        if self.coordinates is not None:
            CoordinatePolicy(self.coordinates)
        if self.top_k < 1 or self.tool_result_chars < 0 or self.parse_retries < 0:
            raise ConfigError(
                f"top_k must be >= 1, tool_result_chars and parse_retries >= 0, got {self.top_k}, "
                f"{self.tool_result_chars} and {self.parse_retries}."
            )
        self.make_adapter()  # an unknown adapter or bad pixel bounds fail here too

    def make_adapter(self, policy: Policy | None = None) -> ModelAdapter:
        """The model family's adapter with this config's overrides (``policy``: its declared space)."""
        coordinates = CoordinatePolicy(self.coordinates) if self.coordinates is not None else None
        if coordinates is None and policy is not None:
            coordinates = preferred_coordinates(policy)
        options = AdapterOptions(coordinates, self.min_pixels, self.max_pixels, self.thinking, self.zoom)
        return get_adapter(self.adapter, options)

    def context_config(
        self, tools_in_request: bool = False, adapter: ModelAdapter | None = None
    ) -> ContextConfig:
        """The context builder settings.

        Args:
            tools_in_request: Tools travel apart (function calling): no ``<tools>`` block.
            adapter: The family rendering the context; ``None``: :meth:`make_adapter`'s.
        """
        policy = context_policy(self.context)
        return ContextConfig(
            retention=policy.retention,
            prompt=PromptConfig(tools_block=not tools_in_request, skill_text=self.skill_text),
            tool_result_chars=policy.tool_result_chars or self.tool_result_chars,
            keep_think=self.keep_think,
            renderer=adapter or self.make_adapter(),
            history=policy.history,
            relay=policy.relay,
        )


@dataclass
class AgentEpisode:
    """The live state of one episode: the env's last answer and what the agent made of the past.

    Attributes:
        task_id: The task (scripted and replay policies key on it).
        run: The run index (or group member).
        instruction: The task instruction.
        obs: The env's latest observation.
        info: The env's latest ``info``.
        steps: The executed steps, the context builder's history (replies that executed
            nothing are not steps).
        feedback: What the next turn relays instead of the env's tool result (a parse error,
            or the results of a reply of several calls joined).
        relays: The results of the last reply's calls one by one, when it made several.
        calls: Model calls so far (every reply counts).
    """

    task_id: str
    run: int
    instruction: str
    obs: dict[str, Any]
    info: dict[str, Any]
    steps: list[Step] = field(default_factory=list)
    feedback: str = ""
    relays: tuple[str, ...] = ()
    calls: int = 0

    @classmethod
    def start(cls, task_id: str, run: int, obs: dict[str, Any], info: dict[str, Any]) -> AgentEpisode:
        """The state right after ``env.reset``."""
        return cls(task_id, run, obs["instruction"], obs, info)


@dataclass(frozen=True)
class Turn:
    """What the model is asked at one step, and what rebuilding it needs.

    Attributes:
        request: The policy's input.
        observation: The screenshot and relayed tool result of this step.
        tools: The MCP tools shown.
        plan: The retention decisions that built the context (``RetentionPlan.to_dicts()``).
        past: Executed steps before this one.
        app: The focused app.
        screen: Screen size ``(width, height)`` the coordinates map onto.
        prepare_s: Seconds spent building the turn.
        zoom: The observation is a zoom (``info["zoom"]``): the reply's points are read on it.
        window: The focused window's title (the env's ``info["active_window"]``); recorded so
            that a rewrite can tell a terminal from a document (:mod:`hybrid_agent.rewrite`).
    """

    request: PolicyRequest
    observation: Observation
    tools: tuple[ToolSpec, ...]
    plan: list[dict[str, Any]]
    past: int
    app: str | None
    screen: tuple[int, int]
    prepare_s: float
    zoom: ZoomView | None = None
    window: str | None = None


@dataclass(frozen=True)
class Decision:
    """A reply read into what the env gets.

    Attributes:
        text: The reply as recorded and parsed (server-side reasoning put back in front).
        parsed: The parse result; ``None`` when the reply executes nothing before parsing
            (a policy error, a cut-off reply).
        action: What ``env.step`` gets (:data:`NO_OP_ACTION` when nothing executes);
            ``None`` for a policy error (the env is not stepped).
        feedback: The error text the next turn shows the model ("" when the call went out).
        record: The step record's fields known before the env runs.
        decide_s: Seconds spent reading the reply.
    """

    text: str
    parsed: ParseResult | None
    action: dict[str, Any] | str | None
    feedback: str
    record: dict[str, Any]
    decide_s: float

    @property
    def call(self) -> Call | None:
        """The call sent (model space), ``None`` when the reply executes nothing."""
        parsed = self.parsed
        return parsed.as_written if parsed is not None and not isinstance(parsed, ParseError) else None

    @property
    def executed_call(self) -> Call | None:
        """The first call as the env gets it (screen space, env names); ``None`` when nothing goes out."""
        parsed = self.parsed
        return parsed.call if parsed is not None and not isinstance(parsed, ParseError) else None

    @property
    def follow_ups(self) -> tuple[ParsedAction, ...]:
        """The reply's further calls, executed after the first, one env step each (HybridCUA)."""
        parsed = self.parsed
        return parsed.then if parsed is not None and not isinstance(parsed, ParseError) else ()

    @property
    def malformed(self) -> bool:
        """The reply was read and could not become a call (a re-sample may repair it)."""
        return isinstance(self.parsed, ParseError)


@dataclass(frozen=True)
class Outcome:
    """What one turn did.

    Attributes:
        record: The step's record line (model output, parse, action, evidence, tokens, timings).
        call: The executed call (model space), ``None`` when the reply executed nothing.
        evidence: The env's report of a text-tool call (MCP or bash).
        exec_ok: The action executed (parsed, accepted by the env, a tool call without error).
        end: At the end (terminated, truncated, or an error): the episode's end record (score,
            error, flags); else ``None``.
        more: The reply's further calls that were executed, with their evidence (HybridCUA's
            several calls per turn).
    """

    record: dict[str, Any]
    call: Call | None
    evidence: Evidence | None
    exec_ok: bool
    end: dict[str, Any] | None = None
    more: tuple[Executed, ...] = ()

    @property
    def ended(self) -> bool:
        """The episode ended with this turn."""
        return self.end is not None


class AgentLoop:
    """Takes the steps of episodes under one :class:`AgentConfig`, for one policy."""

    def __init__(self, config: AgentConfig, policy: Policy | None = None) -> None:
        """Fixes the context, retrieval and coordinate settings for ``policy``.

        The policy's tool transport and declared coordinate space are read; ``None`` gives the defaults.
        """
        self.config = config
        self.adapter = config.make_adapter(policy)
        self.context = config.context_config(bool(getattr(policy, "tools_in_request", False)), self.adapter)
        self.coordinates = self.adapter.coordinates
        self.retrieval = RetrievalConfig(top_k=config.top_k)

    # --- 1. what the model sees ------------------------------------------------------------
    def shown_tools(self, obs: dict[str, Any], info: dict[str, Any]) -> tuple[ToolSpec, ...]:
        """The MCP tools shown: BM25's top-k of the focused app's served tools, or all of them.

        The semantic channel's ``ax`` tools (env option ``ax_tools``) are shown whole beside
        them, never ranked: Hybrid Computer Use offers that channel in every app, and a
        top-k cut would hide it exactly where the app's own tools match the instruction.
        """
        if self.config.gui_only:
            return ()
        served = tools_from_env(step_info(info).get("tools") or [])
        if not self.config.retrieval:
            return tuple(served)
        channel = tuple(tool for tool in served if tool.namespace == AX.name)
        ranked = [tool for tool in served if tool.namespace != AX.name]
        retrieved = BM25Retriever(ranked, self.retrieval).retrieve(obs.get("active_app"), obs["instruction"])
        return retrieved.tools + channel

    def observe(self, episode: AgentEpisode) -> Turn:
        """Builds the context of the episode's next model call."""
        t0 = time.perf_counter()
        obs = episode.obs
        tools = self.shown_tools(obs, episode.info)
        frame = Frame.from_array(obs["screenshot"])
        info = step_info(episode.info)
        zoom = ZoomView.from_info(info["zoom"]) if "zoom" in info else None
        frame_id = info.get("frame_id") if zoom is None else zoom.parent_frame_id
        current = Observation(
            frame,
            episode.feedback or obs.get("tool_result", ""),
            episode.relays,
            frame_id=frame_id if self.config.cite_frames else None,
            zoom_scale=zoom.scale if zoom is not None else None,
        )
        context = build_context(episode.steps, current, episode.instruction, tools, self.context)
        height, width = obs["screenshot"].shape[:2]
        functions = tuple(self.adapter.functions(tools, (width, height)))
        request = PolicyRequest(
            context.messages,
            tools,
            episode.task_id,
            episode.run,
            episode.calls,
            functions=functions,
            stop=self.adapter.stop,
        )
        return Turn(
            request,
            current,
            tools,
            context.plan.to_dicts(),
            len(episode.steps),
            obs.get("active_app") or None,
            (width, height),
            time.perf_counter() - t0,
            zoom,
            step_info(episode.info).get("active_window") or None,
        )

    # --- 2. what the reply means -----------------------------------------------------------
    def decide(self, turn: Turn, generation: Generation) -> Decision:
        """Reads the reply: the action to send, or why nothing is sent."""
        t0 = time.perf_counter()
        text = reply_text(generation)
        record: dict[str, Any] = {
            "step": turn.request.step,
            "app": turn.app,
            "window": turn.window,
            "shown_tools": [t.qualified_name for t in turn.tools],
            "retention": turn.plan,
            "model_output": text,
            "finish_reason": generation.finish_reason,
            "reasoning_apart": generation.reasoning is not None,
            "tokens": {
                "input": generation.input_tokens,
                "output": generation.output_tokens,
                "cached": generation.cached_input_tokens,
                "estimated": generation.tokens_estimated,
            },
            "tool_result_shown": turn.observation.tool_result,
        }
        if turn.observation.parts:  # a several-call reply's results one by one: a rebuilt context needs them
            record["tool_result_parts"] = list(turn.observation.parts)
        # What the current turn told the model of its screenshot: a rebuilt context (SFT) shows it again.
        if turn.observation.frame_id is not None:
            record["frame_id"] = turn.observation.frame_id
        if turn.observation.zoom_scale is not None:
            record["zoom_scale"] = turn.observation.zoom_scale
        if generation.error is not None:
            return Decision(text, None, None, "", record, time.perf_counter() - t0)
        if generation.cut_off:
            record["parse"] = {
                "ok": False,
                "code": str(ParseErrorCode.TRUNCATED),
                "message": TRUNCATED_FEEDBACK,
            }
            return Decision(text, None, NO_OP_ACTION, TRUNCATED_FEEDBACK, record, time.perf_counter() - t0)
        parsed = self.adapter.parse(text, turn.tools, turn.screen)
        if not isinstance(parsed, ParseError) and self.config.interface != "hybrid":
            written = [parsed.as_written, *(f.as_written for f in parsed.then)]
            parsed = refused_calls(self.config.interface, written) or parsed
        if not isinstance(parsed, ParseError) and turn.zoom is not None:
            parsed = from_zoom(parsed, turn.zoom)
            record["zoom"] = turn.zoom.to_info()
        if isinstance(parsed, ParseError):
            record["parse"] = {"ok": False, "code": str(parsed.code), "message": parsed.message}
            return Decision(text, parsed, NO_OP_ACTION, parsed.render(), record, time.perf_counter() - t0)
        call = parsed.as_written
        record["parse"] = {
            "ok": True,
            "call": {"name": call.name, "arguments": call.arguments},
            "repairs": list(parsed.repairs),
            "action_line": parsed.action_line,
        }
        action = {"name": parsed.call.name, "arguments": cite_frame(parsed.call, turn.observation.frame_id)}
        record["action"] = action
        if parsed.then:
            record["then"] = [
                {
                    "call": {"name": f.as_written.name, "arguments": f.as_written.arguments},
                    "action": {"name": f.call.name, "arguments": f.call.arguments},
                }
                for f in parsed.then
            ]
        return Decision(text, parsed, action, "", record, time.perf_counter() - t0)

    # --- 3. what the env made of it --------------------------------------------------------
    def advance(
        self,
        episode: AgentEpisode,
        turn: Turn,
        decision: Decision,
        result: tuple[Any, SupportsFloat, bool, bool, dict[str, Any]],
        timings: dict[str, Any],
    ) -> Outcome:
        """Folds the env's answer to ``decision.action`` into ``episode``; returns the turn's outcome.

        Args:
            episode: The episode (updated in place: obs, info, steps, feedback, calls).
            turn: The turn the reply answered.
            decision: The decision sent.
            result: ``env.step``'s five values.
            timings: Timing fields for the record (``policy_s``, ``env_s`` ...).
        """
        t0 = time.perf_counter()
        obs, reward, terminated, truncated, info = result
        typed = step_info(info)
        record = {**decision.record, "env_error": typed.get("error")}
        call = decision.call
        executed = decision.executed_call
        evidence = evidence_from_info(executed, info) if executed is not None else None
        if call is not None:
            record["evidence"] = asdict(evidence) if evidence is not None else None
            observed = turn.observation
            step = Step(
                observed.frame,
                observed.tool_result,
                decision.text,
                call,
                evidence,
                tool_result_parts=observed.parts,
            )
            record["window_changes"] = list(window_changes_from_info(info))
            episode.steps.append(step)
        episode.feedback = decision.feedback
        episode.relays = ()
        episode.obs, episode.info = obs, info
        episode.calls += 1
        exec_ok = call is not None and not typed.get("error") and (evidence is None or evidence.exec_ok)
        runner_s = turn.prepare_s + decision.decide_s + (time.perf_counter() - t0)
        record["timings"] = {**timings, "runner_s": runner_s}
        end = _end(episode, reward, terminated, truncated, info)
        return Outcome(record, call, evidence, exec_ok, end)

    def advance_follow_up(
        self,
        episode: AgentEpisode,
        outcome: Outcome,
        index: int,
        follow: ParsedAction,
        result: tuple[Any, SupportsFloat, bool, bool, dict[str, Any]],
        env_s: float,
    ) -> Outcome:
        """Folds the env's answer to the reply's ``index``-th further call into the turn's outcome.

        The turn stays one record and one history step: the call and its evidence join the
        step (``Step.more``) and the record's ``then[index]``; what each call printed is
        relayed to the next turn in order.
        """
        obs, reward, terminated, truncated, info = result
        typed = step_info(info)
        evidence = evidence_from_info(follow.call, info)
        done = Executed(follow.as_written, evidence)
        entry = {
            **outcome.record["then"][index],
            "evidence": asdict(evidence) if evidence is not None else None,
            "executed": True,
            "env_error": typed.get("error"),
            "env_s": env_s,
        }
        then = [*outcome.record["then"]]
        then[index] = entry
        if episode.steps:
            last = episode.steps[-1]
            episode.steps[-1] = dataclasses.replace(last, more=(*last.more, done))
        first = episode.relays or (episode.feedback or str(episode.obs.get("tool_result", "")),)
        episode.relays = (*first, str(obs.get("tool_result", "")))
        episode.feedback = "\n\n".join(text for text in episode.relays if text)
        episode.obs, episode.info = obs, info
        end = _end(episode, reward, terminated, truncated, info)
        return dataclasses.replace(
            outcome, record={**outcome.record, "then": then}, end=end, more=(*outcome.more, done)
        )

    def decide_repaired(
        self, turn: Turn, generation: Generation, resample: Resample | None
    ) -> tuple[Decision, Generation, float]:
        """Reads the reply; while it is malformed, re-samples up to ``parse_retries`` times.

        Each failed attempt (its text, parse error and tokens) goes into the final decision's
        record under ``parse_attempts``; after the last failure the step is malformed as usual.

        Returns:
            The final decision, the generation it read, and the policy seconds of all attempts.
        """
        decision = self.decide(turn, generation)
        policy_s = generation.latency_s
        attempts: list[dict[str, Any]] = []
        while resample is not None and decision.malformed and len(attempts) < self.config.parse_retries:
            attempts.append({key: decision.record[key] for key in _ATTEMPT_KEYS})
            generation = resample(turn.request)
            policy_s += generation.latency_s
            decision = self.decide(turn, generation)
        if attempts:
            decision = dataclasses.replace(decision, record={**decision.record, "parse_attempts": attempts})
        return decision, generation, policy_s

    def step(
        self,
        env: gym.Env,
        episode: AgentEpisode,
        turn: Turn,
        generation: Generation,
        resample: Resample | None = None,
    ) -> Outcome:
        """One whole turn on one env: decide, ``env.step``, advance. Never raises for the env's sake.

        A policy error ends the episode as ``policy_error`` without stepping the env; an
        exception out of ``env.step`` ends it as ``env_error``; both are recorded apart
        from scores. ``resample`` answers the turn's request again for parse repair
        (``AgentConfig.parse_retries``); without it a malformed reply is final.
        """
        decision, generation, policy_s = self.decide_repaired(turn, generation, resample)
        if decision.action is None:
            error = {"type": "policy_error", "code": generation.error_code, "message": generation.error}
            record = {**decision.record, "timings": {"policy_s": policy_s}}
            return Outcome(
                record, None, None, False, {"score": None, "error": error, "steps": episode.calls + 1}
            )
        t1 = time.perf_counter()
        try:
            result = env.step(decision.action)
        except Exception as exc:  # recorded apart from a score
            record = {**decision.record, "timings": {"policy_s": policy_s, "env_s": time.perf_counter() - t1}}
            return Outcome(
                record, None, None, False, {**error_end("env_error", exc), "steps": episode.calls + 1}
            )
        env_s = time.perf_counter() - t1
        timings = {"policy_s": policy_s, "env_s": env_s, "env_ms": step_info(result[4]).get("timings")}
        outcome = self.advance(episode, turn, decision, result, timings)
        for index, follow in enumerate(decision.follow_ups):
            if outcome.ended:
                break
            t2 = time.perf_counter()
            try:
                result = env.step({"name": follow.call.name, "arguments": follow.call.arguments})
            except Exception as exc:  # recorded apart from a score
                return dataclasses.replace(
                    outcome, end={**error_end("env_error", exc), "steps": episode.calls}
                )
            outcome = self.advance_follow_up(
                episode, outcome, index, follow, result, time.perf_counter() - t2
            )
        return outcome


def _end(
    episode: AgentEpisode, reward: SupportsFloat, terminated: bool, truncated: bool, info: dict[str, Any]
) -> dict[str, Any] | None:
    """The episode's end record after an env step that ended it, else ``None``."""
    if not (terminated or truncated):
        return None
    typed = step_info(info)
    eval_error = typed.get("eval_error")
    return {
        "score": None if eval_error else float(reward),
        "error": _eval_error(eval_error) if eval_error else None,
        "terminated": terminated,
        "truncated": truncated,
        "claimed_success": typed.get("claimed_success"),
        "evaluation": typed.get("evaluation"),
        "steps": episode.calls,
    }


def from_zoom(parsed: ParsedAction, view: ZoomView) -> ParseResult:
    """A reply read on a zoomed screenshot, every call's points put back on the screen.

    A point on the zoomed image's black margin is ``out_of_space``: nothing of the screen
    is there to act on.
    """
    calls = []
    for one in (parsed, *parsed.then):
        mapped = unzoom_call(one.call, view)
        if isinstance(mapped, str):
            return ParseError(ParseErrorCode.OUT_OF_SPACE, mapped, parsed.think)
        calls.append(dataclasses.replace(one, call=mapped, model_call=one.as_written))
    return dataclasses.replace(calls[0], then=tuple(calls[1:]))


def cite_frame(call: Call, frame_id: int | None) -> dict[str, Any]:
    """The env-space call's arguments, with ``frame_id`` where it is a GUI action that cites a point.

    The coordinates were read from the screenshot of this turn: the env's guard checks
    them against that frame's layout. A call that cites no point goes out unchanged.
    """
    arguments = dict(call.arguments)
    if frame_id is not None and call.is_gui and cited_points(str(arguments.get("action")), arguments):
        arguments["frame_id"] = frame_id
    return arguments


def _eval_error(eval_error: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "eval_error", "exception": eval_error["type"], "message": eval_error["message"]}


def error_end(kind: str, exc: BaseException) -> dict[str, Any]:
    """An episode end record for a crash (``reset_error``, ``env_error`` ...), with the traceback."""
    return {
        "score": None,
        "error": {
            "type": kind,
            "exception": type(exc).__name__,
            "message": str(exc),
            "trace": "".join(traceback.format_exception(exc)),
        },
    }
