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
from fnmatch import fnmatch

from osworld_mcp_env.registry import Registry

from grpo_trainer.episode import Episode, StepSample
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
        interface_bonus: HybridCUA's lambda (0.1): added to R when a successful episode's use of
            the CLI matches the task's ``preferred_interface`` label (``"cli"`` or ``"gui"``).
        exec_penalty: HybridCUA's ``-lambda`` (0.3): added to the advantage of each shell command
            that failed (only those: parse errors and GUI refusals are not penalised).
        cli_calls: Call names that are shell/CLI commands, as ``fnmatch`` patterns: ``bash`` (a
            shell action, HybridCUA's own) and the ``os`` MCP server's tools, each of which runs
            one command line in the desktop (``find``, ``cp``, ``git``, ``gsettings`` ...).
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
    cli_calls: tuple[str, ...] = ("bash", "os.*")

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
INTERFACES = ("cli", "gui")


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


def is_cli(sample: StepSample, config: RewardConfig) -> bool:
    """The sample's call is a shell/CLI command (its name matches ``cli_calls``), executed or not."""
    return sample.call is not None and any(fnmatch(sample.call.name, p) for p in config.cli_calls)


def used_cli(episode: Episode, config: RewardConfig) -> bool:
    """HybridCUA's "the trajectory contains a CLI command": at least one CLI call executed."""
    return any(s.exec_ok and is_cli(s, config) for s in episode.samples)


def interface_unlabelled(episode: Episode, config: RewardConfig) -> bool:
    """The interface term is configured but the task has no label, so it pays 0 (counted, not raised)."""
    return "interface_preference" in config.return_terms and not episode.labels.get("preferred_interface")


@RETURN_TERMS.register("interface_preference")
def interface_preference(episode: Episode, config: RewardConfig) -> float:
    """HybridCUA's ``R_CLI = 1[success] * 1[used_cli == cli_preferred]``, weighted by ``interface_bonus``.

    The paper's rule: a successful trajectory is paid when whether it contains a CLI command
    (:func:`used_cli`) agrees with the task's label, ``preferred_interface = "cli"`` (pays a
    success that used the CLI) or ``"gui"`` (pays a success that used none, GUI alone). An
    unlabelled task gets 0 (:func:`interface_unlabelled` counts those).
    """
    preferred = episode.labels.get("preferred_interface")
    if not preferred or not succeeded(episode, config):
        return 0.0
    if preferred not in INTERFACES:
        raise ConfigError(f"preferred_interface must be one of {INTERFACES}, got {preferred!r}.")
    return config.interface_bonus if used_cli(episode, config) == (preferred == "cli") else 0.0


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
    """HybridCUA's ``r_exec``: ``exec_penalty`` on each failed shell command, 0 elsewhere.

    The paper penalises a command that ``exec_failed`` (non-zero exit, a timeout); here a CLI
    call (:func:`is_cli`) whose execution failed (a tool error). A parse error, a refused or
    failed GUI action and a failed app-tool call are not shell commands and get 0.
    """
    return [config.exec_penalty if is_cli(s, config) and not s.exec_ok else 0.0 for s in episode.samples]


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
