"""Group-relative advantages (the study's Eq. 3) and the group filters.

Per group of G rollouts of one task (crashed ones already removed):

    A_i = (R_i - mean(R)) / (std(R) + eps) / T_i

broadcast to every step of trajectory i, then each step's post-normalisation terms
(tool bonus, execution penalty) are added. The 1/T spreads one trajectory's credit
over its steps, so a long trajectory does not outweigh a short one by having more
samples. std is the unbiased sample std (as TRL and verl compute it).

Two choices are registries, so the GUI+CLI study (HybridCUA, :func:`hybridcua_config`)
is a configuration, not a fork: ``[advantage] broadcast`` (``per_step_share``, the 1/T
above; ``repeat``: every step gets the trajectory's whole z-score, HybridCUA's, which has
no 1/T) and ``[advantage] group_filter`` (``accuracy``: the success rate strictly inside
(acc_lo, acc_hi); ``reward_spread``: HybridCUA's, drop a group whose combined rewards R
are all equal, since its z-scores are all 0).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from osworld_mcp_env.registry import Registry

from grpo_trainer.errors import ConfigError, RegistryError
from grpo_trainer.objectives.rewards import (
    LAMBDA_EXEC_PAPER,
    LAMBDA_EXEC_RELEASED,
    RewardConfig,
    episode_return,
    step_bonuses,
    succeeded,
)
from grpo_trainer.rollouts.episode import Episode


@dataclass(frozen=True)
class AdvantageConfig:
    """Advantage settings.

    Attributes:
        acc_lo: Groups whose success rate is ``<= acc_lo`` are dropped (nothing to compare).
        acc_hi: Groups whose success rate is ``>= acc_hi`` are dropped.
        std_eps: Added to the group std before dividing.
        min_group: Fewest surviving (non-crashed) rollouts a group needs to be kept.
        broadcast: How a trajectory's z-score reaches its steps, by registered name
            (``per_step_share``: divided by T; ``repeat``: whole, HybridCUA).
        group_filter: Which groups enter the gradient, by registered name (``accuracy``:
            the bounds above; ``reward_spread``: R not all equal, HybridCUA).
    """

    acc_lo: float = 0.05
    acc_hi: float = 0.95
    std_eps: float = 1e-6
    min_group: int = 2
    broadcast: str = "per_step_share"
    group_filter: str = "accuracy"

    def __post_init__(self) -> None:
        BROADCASTS.get(self.broadcast)
        GROUP_FILTERS.get(self.group_filter)
        if not 0.0 <= self.acc_lo < self.acc_hi <= 1.0:
            raise ConfigError(f"Need 0 <= acc_lo < acc_hi <= 1, got ({self.acc_lo}, {self.acc_hi}).")
        if self.min_group < 2:
            raise ConfigError(f"min_group must be >= 2 (a z-score needs two rollouts), got {self.min_group}.")


def zscore(returns: Sequence[float], eps: float = 1e-6) -> np.ndarray:
    """``(R - mean) / (std + eps)`` over one group; shape ``(G,) -> (G,)``."""
    r = np.asarray(returns, dtype=np.float64)
    std = r.std(ddof=1) if len(r) > 1 else 0.0
    return (r - r.mean()) / (std + eps)


Broadcast = Callable[[Sequence[float], Sequence[int]], list[list[float]]]
GroupFilter = Callable[[Sequence[float], float, AdvantageConfig], bool]
BROADCASTS: Registry[Broadcast] = Registry("advantage broadcast", error=RegistryError)
GROUP_FILTERS: Registry[GroupFilter] = Registry("group filter", error=RegistryError)


@BROADCASTS.register("per_step_share")
def broadcast_per_step(normalised: Sequence[float], lengths: Sequence[int]) -> list[list[float]]:
    """Trajectory i's normalised return divided by T_i, repeated for each of its T_i steps."""
    return [[float(a) / t] * t for a, t in zip(normalised, lengths, strict=True)]


@BROADCASTS.register("repeat")
def broadcast_whole(normalised: Sequence[float], lengths: Sequence[int]) -> list[list[float]]:
    """HybridCUA: trajectory i's normalised return, unscaled, on each of its T_i steps (no 1/T)."""
    return [[float(a)] * t for a, t in zip(normalised, lengths, strict=True)]


@GROUP_FILTERS.register("accuracy")
def keep_group(returns: Sequence[float], success_rate: float, config: AdvantageConfig) -> bool:
    """The accuracy filter: keep only groups with ``acc_lo < success rate < acc_hi``."""
    return config.acc_lo < success_rate < config.acc_hi


@GROUP_FILTERS.register("reward_spread")
def keep_spread(returns: Sequence[float], success_rate: float, config: AdvantageConfig) -> bool:
    """HybridCUA: drop a group whose combined rewards are all equal, keep it otherwise.

    The combined reward is R(tau), the sum of the return terms (outcome plus the interface
    preference); equal means ``max - min <= 1e-12`` (HybridCUA's test), the z-scores are then
    all 0 and only the step terms (the execution term) would remain: the group is dropped
    before them. Unlike ``accuracy``, an all-success group whose interface bonus differs
    between members is kept.
    """
    return bool(returns) and max(returns) - min(returns) > REWARD_SPREAD_TOL


REWARD_SPREAD_TOL = 1e-12


@dataclass(frozen=True)
class GroupAdvantages:
    """The outcome of scoring one group.

    Attributes:
        episodes: The surviving (non-crashed) episodes, in order.
        advantages: Per surviving episode, one advantage per step sample.
        returns: R(tau) per surviving episode.
        success_rate: Share of surviving episodes that succeeded.
        crashed: Episodes removed because they crashed (never scored).
        kept: Whether the group enters the gradient (filter and ``min_group`` passed).
    """

    episodes: list[Episode]
    advantages: list[list[float]]
    returns: list[float]
    success_rate: float
    crashed: int
    kept: bool


def group_advantages(
    group: Sequence[Episode], rewards: RewardConfig, config: AdvantageConfig
) -> GroupAdvantages:
    """Scores one group: drop crashes, compute R, z-score, broadcast, add step terms, filter."""
    alive = [e for e in group if not e.crashed]
    crashed = len(group) - len(alive)
    returns = [episode_return(e, rewards) for e in alive]
    success = float(np.mean([succeeded(e, rewards) for e in alive])) if alive else 0.0
    kept = len(alive) >= config.min_group and GROUP_FILTERS.get(config.group_filter)(returns, success, config)
    if not alive:
        return GroupAdvantages([], [], [], 0.0, crashed, False)
    broadcast = BROADCASTS.get(config.broadcast)
    base = broadcast(zscore(returns, config.std_eps).tolist(), [e.length for e in alive])
    advantages = [
        [a + b for a, b in zip(steps, step_bonuses(e, rewards), strict=True)]
        for steps, e in zip(base, alive, strict=True)
    ]
    return GroupAdvantages(alive, advantages, returns, success, crashed, kept)


HYBRIDCUA_VARIANTS: dict[str, dict[str, object]] = {
    # The paper: a binary outcome (+1/-1 here) and lambda_exec 0.3.
    "paper": {"outcome": "binary", "lambda_exec": LAMBDA_EXEC_PAPER},
    # The released code and config: the raw score in [0, 1] and lambda_exec 0.
    "released": {"outcome": "raw_score", "lambda_exec": LAMBDA_EXEC_RELEASED},
}


def hybridcua_config(
    variant: str = "paper", **reward_overrides: object
) -> tuple[RewardConfig, AdvantageConfig]:
    """The GUI+CLI study's (HybridCUA's) ``[reward]`` and ``[advantage]`` sections.

    R is the outcome plus the success-gated interface preference (0.1, any CLI step counts);
    ``-lambda_exec`` lands on each failed CLI step after normalisation; every step gets the
    whole z-score (no 1/T); groups whose combined rewards are all equal are dropped.

    Args:
        variant: Which published setting (:data:`HYBRIDCUA_VARIANTS`): ``paper`` (binary
            outcome, lambda_exec 0.3) or ``released`` (raw score, lambda_exec 0, the released
            config).
        reward_overrides: Replace ``[reward]`` keys (``outcome``, ``lambda_exec`` ...).
    """
    if variant not in HYBRIDCUA_VARIANTS:
        raise ConfigError(f"HybridCUA variant must be one of {sorted(HYBRIDCUA_VARIANTS)}, got {variant!r}.")
    base: dict[str, object] = {
        "return_terms": ("outcome", "interface_preference"),
        "step_terms": ("exec_penalty",),
        **HYBRIDCUA_VARIANTS[variant],
    }
    rewards = RewardConfig(**{**base, **reward_overrides})  # type: ignore[arg-type]
    return rewards, AdvantageConfig(broadcast="repeat", group_filter="reward_spread")
