"""Reward terms: the return R(tau) before normalisation, and per-step terms added after it.

Two pluggable families, each a registry with one signature:

* **return terms** ``(episode, config) -> float`` are summed into R(tau), which the
  group z-scores (the study's Eq. 3: outcome, length penalty, step-cap penalty;
  HybridCUA's success-gated interface preference). The outcome has two scales
  (``RewardConfig.outcome``): ``binary``, +1 at the success threshold and -1 below it
  (the study's, and the binary outcome HybridCUA's paper describes), and ``raw_score``,
  the evaluator's score in [0, 1] with partial credit kept (HybridCUA's released code).
* **step terms** ``(episode, config) -> list[float]`` give one value per step sample,
  added to that step's advantage *after* normalisation, so they survive the z-score
  and reach exactly the tokens of that action (the study's MCP tool bonus;
  HybridCUA's execution penalty).

Which step is a CLI step and whether it failed come from
:mod:`hybrid_agent.step_kind`, the classifier the metrics and labels use too.

A crashed episode has no return: callers drop it before any term runs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from hybrid_agent.step_kind import StepKind
from osworld_mcp_env.registry import Registry

from grpo_trainer.errors import ConfigError, RegistryError
from grpo_trainer.rollouts.episode import Episode


@dataclass(frozen=True)
class RewardConfig:
    """Reward settings (the study's Table 6 defaults; HybridCUA's terms are off unless named).

    Attributes:
        return_terms: Return terms summed into R(tau), by registered name.
        step_terms: Step terms added after normalisation, by registered name.
        max_steps: T_max, the step cap of an episode.
        outcome: The outcome's scale, by name (:data:`OUTCOME_SCALES`): ``binary`` (+1 at or
            above ``success_threshold``, else -1) or ``raw_score`` (the evaluator's score,
            HybridCUA's released code).
        success_threshold: An evaluator score at or above it counts as success.
        lambda_len: Length penalty weight: ``- lambda_len * T / T_max``.
        lambda_cap: Step-cap penalty: ``- lambda_cap`` when ``T >= T_max``.
        lambda_mcp: Tool bonus per new, executed, state-changing MCP call, after normalisation.
        interface_bonus: HybridCUA's lambda (0.1): added to R when a successful episode's use of
            the CLI matches the task's ``preferred_interface`` label (``"cli"`` or ``"gui"``).
        lambda_exec: HybridCUA's ``lambda_exec``: ``lambda_exec * e_t`` (``e_t = -1``) is added to
            the advantage of each CLI step that failed. Its paper (and an earlier config) sets
            0.3 (:data:`LAMBDA_EXEC_PAPER`); its released config sets 0
            (:data:`LAMBDA_EXEC_RELEASED`).
        labels_file: A labels file of ``hybrid-agent label`` (:mod:`hybrid_agent.labels`): its
            ``preferred_interface`` per task id is the interface bonus's label, over a template's
            own. A task it does not label, with no label of its own, gets no bonus (the trainer
            says so once per task). ``None``: the templates' labels alone.
    """

    return_terms: tuple[str, ...] = ("outcome", "length", "step_cap")
    step_terms: tuple[str, ...] = ("tool_bonus",)
    max_steps: int = 50
    outcome: str = "binary"
    success_threshold: float = 1.0
    lambda_len: float = 0.05
    lambda_cap: float = 0.2
    lambda_mcp: float = 0.1
    interface_bonus: float = 0.1
    lambda_exec: float = 0.3
    labels_file: str | None = None

    def __post_init__(self) -> None:
        if self.max_steps < 1:
            raise ConfigError(f"max_steps (T_max) must be >= 1, got {self.max_steps}.")
        if self.outcome not in OUTCOME_SCALES:
            raise ConfigError(f"outcome must be one of {sorted(OUTCOME_SCALES)}, got {self.outcome!r}.")
        if self.lambda_exec < 0:
            raise ConfigError(f"lambda_exec is a weight (the term is -lambda_exec), got {self.lambda_exec}.")
        for name in self.return_terms:
            RETURN_TERMS.get(name)
        for name in self.step_terms:
            STEP_TERMS.get(name)


ReturnTerm = Callable[[Episode, RewardConfig], float]
StepTerm = Callable[[Episode, RewardConfig], list[float]]
RETURN_TERMS: Registry[ReturnTerm] = Registry("return term", error=RegistryError)
STEP_TERMS: Registry[StepTerm] = Registry("step term", error=RegistryError)
INTERFACES = ("cli", "gui")
LAMBDA_EXEC_PAPER = 0.3  # HybridCUA's paper and its earlier RL config
LAMBDA_EXEC_RELEASED = 0.0  # HybridCUA's released RL config


def succeeded(episode: Episode, config: RewardConfig) -> bool:
    """The episode's score reached the success threshold."""
    return episode.score is not None and episode.score >= config.success_threshold


def binary_outcome(episode: Episode, config: RewardConfig) -> float:
    """succ(tau): +1 on success, -1 otherwise (a partial score below the threshold is -1)."""
    return 1.0 if succeeded(episode, config) else -1.0


def raw_score_outcome(episode: Episode, config: RewardConfig) -> float:
    """The evaluator's score in [0, 1], partial credit kept (HybridCUA's released reward)."""
    return float(episode.score or 0.0)


OUTCOME_SCALES: dict[str, ReturnTerm] = {"binary": binary_outcome, "raw_score": raw_score_outcome}


@RETURN_TERMS.register("outcome")
def outcome(episode: Episode, config: RewardConfig) -> float:
    """The outcome on the configured scale (``RewardConfig.outcome``)."""
    return OUTCOME_SCALES[config.outcome](episode, config)


@RETURN_TERMS.register("length")
def length(episode: Episode, config: RewardConfig) -> float:
    """``- lambda_len * T / T_max``: shorter successful routes score higher."""
    return -config.lambda_len * episode.length / config.max_steps


@RETURN_TERMS.register("step_cap")
def step_cap(episode: Episode, config: RewardConfig) -> float:
    """``- lambda_cap`` when the episode used the whole step budget (``T >= T_max``)."""
    return -config.lambda_cap if episode.length >= config.max_steps else 0.0


def used_cli(episode: Episode) -> bool:
    """HybridCUA's ``used_cli``: at least one CLI step (:class:`~hybrid_agent.step_kind.StepKind`).

    Failed or not, as HybridCUA counts it.

    A shell command with pyautogui in it is a GUI step and an ``os.*`` MCP tool a tool
    call: neither counts.
    """
    return any(e.kind is StepKind.CLI for s in episode.samples for e in s.executed)


def interface_unlabelled(episode: Episode, config: RewardConfig) -> bool:
    """The interface term is configured but the task has no label, so it pays 0 (counted, not raised)."""
    return "interface_preference" in config.return_terms and not episode.labels.get("preferred_interface")


@RETURN_TERMS.register("interface_preference")
def interface_preference(episode: Episode, config: RewardConfig) -> float:
    """HybridCUA's ``R_CLI = 1[success] * 1[used_cli == cli_preferred]``, weighted by ``interface_bonus``.

    The paper's rule: a successful trajectory is paid when whether it contains a CLI command
    (:func:`used_cli`, failed commands included) agrees with the task's label,
    ``preferred_interface = "cli"`` (pays a success that used the CLI) or ``"gui"`` (pays a
    success that used none, GUI alone). An unlabelled task gets 0 (:func:`interface_unlabelled` counts those).
    """
    preferred = episode.labels.get("preferred_interface")
    if not preferred or not succeeded(episode, config):
        return 0.0
    if preferred not in INTERFACES:
        raise ConfigError(f"preferred_interface must be one of {INTERFACES}, got {preferred!r}.")
    return config.interface_bonus if used_cli(episode) == (preferred == "cli") else 0.0


@STEP_TERMS.register("tool_bonus")
def tool_bonus(episode: Episode, config: RewardConfig) -> list[float]:
    """``lambda_mcp * b_t``: b_t = 1 for an executed, not read-only MCP call whose key is new.

    The key is the (tool, arguments) pair; it is new when no earlier step of the
    trajectory made the same call (whatever its result). Not gated on the outcome:
    the bonus rewards trying tools, which the z-scored outcome alone rarely does early.
    """
    seen: set[str] = set()
    out = []
    for sample in episode.samples:
        key = sample.call_key
        eligible = sample.is_mcp and sample.exec_ok and sample.read_only is not True and key not in seen
        out.append(config.lambda_mcp if eligible else 0.0)
        if key is not None:
            seen.add(key)
    return out


@STEP_TERMS.register("exec_penalty")
def exec_penalty(episode: Episode, config: RewardConfig) -> list[float]:
    """HybridCUA's execution term ``lambda_exec * e_t``: ``-lambda_exec`` on each failed CLI step.

    Failed is :func:`hybrid_agent.step_kind.cli_step_failed`: a timeout, or a non-zero exit
    except exit 1 with empty stderr; a desktop fault is exempt. Only CLI steps are checked: a
    failing pyautogui heredoc, a parse error, a refused GUI action and a failed MCP tool get 0.
    A reply of several calls is one sample: it gets the term once when any of its CLI calls failed.
    """
    return [-config.lambda_exec if s.cli_failed else 0.0 for s in episode.samples]


def episode_return(episode: Episode, config: RewardConfig) -> float:
    """R(tau): the sum of the configured return terms."""
    return sum(RETURN_TERMS.get(name)(episode, config) for name in config.return_terms)


def step_bonuses(episode: Episode, config: RewardConfig) -> list[float]:
    """Per-step sum of the configured step terms (added after normalisation)."""
    total = [0.0] * episode.length
    for name in config.step_terms:
        values = STEP_TERMS.get(name)(episode, config)
        total = [a + b for a, b in zip(total, values, strict=True)]
    return total
