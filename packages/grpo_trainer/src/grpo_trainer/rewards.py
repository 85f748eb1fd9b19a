"""Reward terms: the return R(tau) before normalisation, and per-step terms added after it.

Two pluggable families, each a registry with one signature:

* **return terms** ``(episode, config) -> float`` are summed into R(tau), which the
  group z-scores (the study's Eq. 3: outcome, length penalty, step-cap penalty;
  HybridCUA's success-gated interface preference).
* **step terms** ``(episode, config) -> list[float]`` give one value per step sample,
  added to that step's advantage *after* normalisation, so they survive the z-score
  and reach exactly the tokens of that action (the study's MCP tool bonus;
  HybridCUA's execution penalty).

A crashed episode has no return: callers drop it before any term runs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from osworld_mcp_env.registry import Registry

from grpo_trainer.episode import Episode
from grpo_trainer.errors import ConfigError, RegistryError


@dataclass(frozen=True)
class RewardConfig:
    """Reward settings (the study's Table 6 defaults; HybridCUA's terms are off unless named).

    Attributes:
        return_terms: Return terms summed into R(tau), by registered name.
        step_terms: Step terms added after normalisation, by registered name.
        max_steps: T_max, the step cap of an episode.
        success_threshold: An evaluator score at or above it counts as success (+1), else -1.
        lambda_len: Length penalty weight: ``- lambda_len * T / T_max``.
        lambda_cap: Step-cap penalty: ``- lambda_cap`` when ``T >= T_max``.
        lambda_mcp: Tool bonus per new, executed, state-changing MCP call, after normalisation.
        interface_bonus: HybridCUA: added to R when a successful episode used the task's
            ``preferred_interface`` label (``"mcp"`` or ``"gui"``).
        exec_penalty: HybridCUA: added (negative) to the advantage of each action that failed
            to execute (a parse error, a refused action, a tool error).
    """

    return_terms: tuple[str, ...] = ("outcome", "length", "step_cap")
    step_terms: tuple[str, ...] = ("tool_bonus",)
    max_steps: int = 50
    success_threshold: float = 1.0
    lambda_len: float = 0.05
    lambda_cap: float = 0.2
    lambda_mcp: float = 0.1
    interface_bonus: float = 0.1
    exec_penalty: float = -0.3

    def __post_init__(self) -> None:
        if self.max_steps < 1:
            raise ConfigError(f"max_steps (T_max) must be >= 1, got {self.max_steps}.")
        for name in self.return_terms:
            RETURN_TERMS.get(name)
        for name in self.step_terms:
            STEP_TERMS.get(name)


ReturnTerm = Callable[[Episode, RewardConfig], float]
StepTerm = Callable[[Episode, RewardConfig], list[float]]
RETURN_TERMS: Registry[ReturnTerm] = Registry("return term", error=RegistryError)
STEP_TERMS: Registry[StepTerm] = Registry("step term", error=RegistryError)


def succeeded(episode: Episode, config: RewardConfig) -> bool:
    """The episode's score reached the success threshold."""
    return episode.score is not None and episode.score >= config.success_threshold


@RETURN_TERMS.register("outcome")
def outcome(episode: Episode, config: RewardConfig) -> float:
    """succ(tau): +1 on success, -1 otherwise."""
    return 1.0 if succeeded(episode, config) else -1.0


@RETURN_TERMS.register("length")
def length(episode: Episode, config: RewardConfig) -> float:
    """``- lambda_len * T / T_max``: shorter successful routes score higher."""
    return -config.lambda_len * episode.length / config.max_steps


@RETURN_TERMS.register("step_cap")
def step_cap(episode: Episode, config: RewardConfig) -> float:
    """``- lambda_cap`` when the episode used the whole step budget (``T >= T_max``)."""
    return -config.lambda_cap if episode.length >= config.max_steps else 0.0


@RETURN_TERMS.register("interface_preference")
def interface_preference(episode: Episode, config: RewardConfig) -> float:
    """HybridCUA: ``+interface_bonus`` when a success used the task's preferred interface.

    The label ``preferred_interface`` is ``"mcp"`` (tool/CLI-solvable) or ``"gui"``; an
    episode "used" it when at least one of its actions of that kind executed. Unlabelled
    tasks get nothing.
    """
    preferred = episode.labels.get("preferred_interface")
    if preferred is None or not succeeded(episode, config):
        return 0.0
    if preferred not in ("mcp", "gui"):
        raise ConfigError(f"preferred_interface must be 'mcp' or 'gui', got {preferred!r}.")
    used = any(
        s.exec_ok and s.call is not None and (s.is_mcp == (preferred == "mcp")) for s in episode.samples
    )
    return config.interface_bonus if used else 0.0


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
    """HybridCUA: ``exec_penalty`` on each action that failed to execute, 0 elsewhere."""
    return [0.0 if s.exec_ok else config.exec_penalty for s in episode.samples]


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


def hybridcua_config(**overrides: object) -> RewardConfig:
    """The GUI+CLI study's second set: outcome + interface preference; execution penalty per step."""
    base: dict[str, object] = {
        "return_terms": ("outcome", "interface_preference"),
        "step_terms": ("exec_penalty",),
    }
    return RewardConfig(**{**base, **overrides})  # type: ignore[arg-type]
