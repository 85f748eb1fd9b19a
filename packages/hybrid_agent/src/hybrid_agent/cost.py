"""What a run cost in USD: a price table per model and the cost of each step, episode and run.

A step record carries the call's token counts (``tokens.input``, ``tokens.cached``,
``tokens.output``; :meth:`hybrid_agent.agent_loop.AgentLoop.decide`). Its cost is::

    (input - cached) * price.input + cached * price.cached_input + output * price.output   (per 1e6)

A step without counts (a failed call, a server that reported no ``usage``) has no cost
rather than a guessed one: sums over such steps are lower bounds and say so
(:attr:`Spend.uncounted`). A server that does not report cached tokens is priced as if
nothing was cached (an upper bound for that step). A model without a price has no cost
at all (``None``), never 0.

The bundled table (``prices.json`` in this package) holds a few well-known models at
their list prices on its ``as_of`` date; ``--prices FILE`` (same format) overrides or
adds entries.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from hybrid_agent.errors import ConfigError
from hybrid_agent.recorder import EpisodeRecord, iter_archived_tries, iter_episodes

PER_TOKENS = 1_000_000
_FIELDS = ("input", "cached_input", "output")


@dataclass(frozen=True)
class Price:
    """USD per million tokens of one model.

    Attributes:
        input: Uncached prompt tokens.
        cached_input: Prompt tokens read from the server's prompt cache.
        output: Generated tokens (reasoning included: APIs bill it as output).
    """

    input: float
    cached_input: float
    output: float

    def __post_init__(self) -> None:
        if min(self.input, self.cached_input, self.output) < 0:
            raise ConfigError(f"Prices must be >= 0 USD per million tokens, got {self}.")

    def usd(self, input_tokens: int, cached_tokens: int, output_tokens: int) -> float:
        """The cost of one call; ``cached_tokens`` are part of ``input_tokens``."""
        uncached = input_tokens - cached_tokens
        total = uncached * self.input + cached_tokens * self.cached_input + output_tokens * self.output
        return total / PER_TOKENS


@dataclass(frozen=True)
class PriceTable:
    """Prices by model name: :meth:`bundled` is the package's table, :meth:`with_file` layers a user's."""

    prices: Mapping[str, Price]
    as_of: str = ""

    @classmethod
    def bundled(cls) -> PriceTable:
        """The table shipped with the package (``hybrid_agent/prices.json``)."""
        text = resources.files("hybrid_agent").joinpath("prices.json").read_text(encoding="utf-8")
        return cls._parse(json.loads(text), "hybrid_agent/prices.json")

    @classmethod
    def load(cls, path: str | Path) -> PriceTable:
        """A price file (``{"models": {name: {"input", "cached_input", "output"}}}``).

        Raises:
            ConfigError: The file is missing, not JSON, or an entry lacks a field.
        """
        path = Path(path)
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise ConfigError(f"Cannot read the price file {path}: {exc}") from exc
        return cls._parse(document, str(path))

    @classmethod
    def _parse(cls, document: Any, source: str) -> PriceTable:
        models = document.get("models") if isinstance(document, dict) else None
        if not isinstance(models, dict):
            raise ConfigError(f'{source}: expected {{"models": {{name: {{{", ".join(_FIELDS)}}}}}}}.')
        prices = {}
        for name, entry in models.items():
            missing = [f for f in _FIELDS if not isinstance((entry or {}).get(f), int | float)]
            if missing:
                raise ConfigError(f"{source}: model {name!r} lacks a number for {', '.join(missing)}.")
            prices[name] = Price(*(float(entry[f]) for f in _FIELDS))
        return cls(prices, str(document.get("as_of", "")))

    def with_file(self, path: str | Path | None) -> PriceTable:
        """This table with a user's file layered on top (its entries win); ``None``: unchanged."""
        if path is None:
            return self
        user = PriceTable.load(path)
        return PriceTable({**self.prices, **user.prices}, user.as_of or self.as_of)

    def lookup(self, model: str) -> Price | None:
        """The price of ``model`` (exact name, else case-insensitive); ``None`` when it has none."""
        if model in self.prices:
            return self.prices[model]
        folded = {name.lower(): price for name, price in self.prices.items()}
        return folded.get(model.lower())


def model_name(policy_spec: str) -> str:
    """The model a policy spec names, as price tables key it.

    ``openai:http://host/v1#gpt-4o`` -> ``gpt-4o``; ``hf:/ckpt/Qwen3-VL-8B`` -> ``Qwen3-VL-8B``;
    a spec without a model part (``scripted:tools``) is returned as it is.
    """
    if "#" in policy_spec:
        return policy_spec.rpartition("#")[2]
    kind, sep, rest = policy_spec.partition(":")
    if sep and kind.isidentifier() and rest:
        return Path(rest.rstrip("/")).name or rest
    return policy_spec


@dataclass(frozen=True)
class Spend:
    """USD over some steps.

    Attributes:
        usd: The sum over the steps with token counts.
        uncounted: Steps without counts (their cost is unknown; ``usd`` is a lower bound when > 0).
        estimated: Some counts were estimates (scripted policy).
    """

    usd: float = 0.0
    uncounted: int = 0
    estimated: bool = False

    def __add__(self, other: Spend) -> Spend:
        estimated = self.estimated or other.estimated
        return Spend(self.usd + other.usd, self.uncounted + other.uncounted, estimated)


def step_spend(tokens: Mapping[str, Any] | None, price: Price) -> Spend:
    """The cost of one step from its record's ``tokens``."""
    tokens = tokens or {}
    input_tokens, output_tokens = tokens.get("input"), tokens.get("output")
    if input_tokens is None or output_tokens is None:
        return Spend(uncounted=1)
    cached = min(tokens.get("cached") or 0, input_tokens)
    return Spend(price.usd(input_tokens, cached, output_tokens), estimated=bool(tokens.get("estimated")))


def steps_spend(steps: Iterable[Mapping[str, Any]], price: Price) -> Spend:
    """The cost of an episode's step records (every call, a failed parse included: it was billed)."""
    total = Spend()
    for step in steps:
        total += step_spend(step.get("tokens"), price)
    return total


def run_spend(run_dir: str | Path, price: Price) -> Spend:
    """What a run directory has spent: every finished record, errored tries set aside included."""
    total = Spend()
    for record in iter_episodes(run_dir):
        total += steps_spend(record.steps, price)
    for archived in iter_archived_tries(run_dir):
        total += steps_spend(archived.record.steps, price)
    return total


@dataclass(frozen=True)
class Budget:
    """A spending cap for one run directory (``hybrid-agent eval --budget-usd``).

    The cap covers the directory's whole spend, earlier calls of a resumed run included,
    so rerunning the same command never spends past it; a larger cap continues the run.

    Attributes:
        limit_usd: Stop starting episodes once the spend reaches this.
        model: The model priced (for messages).
        price: Its price.
    """

    limit_usd: float
    model: str
    price: Price

    def __post_init__(self) -> None:
        if self.limit_usd <= 0:
            raise ConfigError(f"The budget must be > 0 USD, got {self.limit_usd}.")

    @classmethod
    def for_policy(cls, limit_usd: float, policy_spec: str, table: PriceTable) -> Budget:
        """The budget of a run of ``policy_spec``.

        Raises:
            ConfigError: The model has no price (a budget over unknown costs would never stop).
        """
        model = model_name(policy_spec)
        price = table.lookup(model)
        if price is None:
            known = ", ".join(sorted(table.prices))
            raise ConfigError(
                f"--budget-usd needs a price for model {model!r}, which the price table lacks "
                f"(it has: {known}); add it with --prices FILE."
            )
        return cls(limit_usd, model, price)


@dataclass(frozen=True)
class RunCost:
    """What one run directory cost (Table 2's USD columns, ``summary.json``).

    Attributes:
        model: The model priced.
        per_episode: Mean USD over the current episodes.
        per_task: Mean USD over each task's current episodes.
        per_run: Mean over run indices of what one pass over the suite cost.
        total: Everything spent: current episodes and the errored tries set aside.
        uncounted: Steps without token counts (the sums are lower bounds when > 0).
        estimated: Some counts were estimates (scripted policy).
    """

    model: str
    per_episode: float
    per_task: dict[str, float]
    per_run: float
    total: float
    uncounted: int
    estimated: bool


def run_cost(
    model: str, price: Price, current: Iterable[EpisodeRecord], archived: Iterable[EpisodeRecord] = ()
) -> RunCost | None:
    """The :class:`RunCost` of a run's records; ``None`` without any current episode."""
    by_task: dict[str, list[float]] = {}
    by_run: dict[int, float] = {}
    total = Spend()
    for record in current:
        spend = steps_spend(record.steps, price)
        total += spend
        by_task.setdefault(record.task_id, []).append(spend.usd)
        by_run[record.run] = by_run.get(record.run, 0.0) + spend.usd
    if not by_task:
        return None
    episodes = sum(len(costs) for costs in by_task.values())
    current_usd = total.usd
    for record in archived:
        total += steps_spend(record.steps, price)
    return RunCost(
        model=model,
        per_episode=current_usd / episodes,
        per_task={task: sum(costs) / len(costs) for task, costs in by_task.items()},
        per_run=sum(by_run.values()) / len(by_run),
        total=total.usd,
        uncounted=total.uncounted,
        estimated=total.estimated,
    )
