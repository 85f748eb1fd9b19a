"""A tabular policy over a tree of multi-turn plans: the smallest honest learner for the real desktop.

:class:`~grpo_trainer.model.tiny.TinyPolicy` chooses one response byte by byte; an episode
on the real desktop takes several calls (write a cell, save, terminate), and a
policy that picks each call uniformly from a menu solves a three-call task about
once in ``len(menu) ** 3`` tries, too rarely for a few GRPO steps to see a success.
:class:`MenuPolicy` therefore chooses among *plans*, sequences of complete responses
(``Action:`` line and one ``<tool_call>``, read by ``hybrid_agent``'s parser like a
model's), the way TinyPolicy chooses among byte strings: the plans form a
:class:`~grpo_trainer.model.tiny.PrefixTree`, and at each turn the policy may give only a
response that continues some plan after the calls it already made. Its state is that
history, read from the context the agent loop built (the current turn's "Previous
actions" lines, :func:`hybrid_agent.prompt.current_turn_text`); its parameters are one
row of logits per history, masked to the responses that continue it. A response
forced by the tree has log-probability 0 and no gradient: the branch points carry it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from hybrid_agent.messages import Message
from hybrid_agent.parse import extract_action_line
from torch import nn

from grpo_trainer.errors import ConfigError, GRPOError
from grpo_trainer.model.policy import Sampled
from grpo_trainer.model.tiny import PrefixTree

HISTORY_HEADER = "Previous actions:\n"
"""Where :func:`hybrid_agent.prompt.current_turn_text` starts the one-line history."""


class MenuPolicy(nn.Module):
    """Logits per history over the responses that continue one of ``plans``.

    A prompt is ``[START, r_1, ..., r_t]``: the menu indices of the responses made so
    far; a response is one token, the index of the chosen response.
    """

    allowed: torch.Tensor  # (histories, responses): which responses continue each history (a buffer)

    def __init__(self, plans: Sequence[Sequence[str]]) -> None:
        """Builds the tree of ``plans``; every logit starts at 0 (uniform at each branch point).

        Raises:
            ConfigError: No plans, an empty plan, a response without an ``Action:`` line, or two
                responses with the same ``Action:`` line (the history could not tell them apart).
        """
        super().__init__()
        if not plans or not all(plans):
            raise ConfigError("MenuPolicy needs at least one plan, and every plan at least one response.")
        self.responses: list[str] = list(dict.fromkeys(r for plan in plans for r in plan))
        self._by_summary: dict[str, int] = {}
        for index, response in enumerate(self.responses):
            summary = extract_action_line(response)
            if summary is None or summary in self._by_summary:
                raise ConfigError(f"Response {index} needs its own Action: line, got {summary!r}.")
            self._by_summary[summary] = index
        self.start = len(self.responses)
        indices = [[self.responses.index(r) for r in plan] for plan in plans]
        self.tree = PrefixTree(indices)
        histories = sorted({tuple(p[:t]) for p in indices for t in range(len(p))})
        self._rows = {history: row for row, history in enumerate(histories)}
        allowed = torch.zeros(len(histories), len(self.responses), dtype=torch.bool)
        for history, row in self._rows.items():
            allowed[row, self.tree.allowed(history)] = True
        self.register_buffer("allowed", allowed)
        self.logits = nn.Parameter(torch.zeros(len(histories), len(self.responses)))

    @property
    def module(self) -> nn.Module:
        """The trained module: the policy itself."""
        return self

    def encode(self, messages: Sequence[Message]) -> list[int]:
        """``[START]`` and the menu index of every earlier action the context lists.

        Raises:
            GRPOError: The context has no history lines, or lists an action that is not on the menu.
        """
        content = messages[-1]["content"]
        parts = content if isinstance(content, list) else [{"type": "text", "text": content}]
        text = next((p["text"] for p in reversed(parts) if p["type"] == "text"), "")
        _, found, tail = text.rpartition(HISTORY_HEADER)
        if not found:
            raise GRPOError(
                "The context's last turn lists no previous actions: not the agent loop's context."
            )
        ids = [self.start]
        for step, line in enumerate(tail.split("\n") if tail != "None" else [], start=1):
            summary = line.removeprefix(f"Step {step}: ")
            if summary == line or summary not in self._by_summary:
                raise GRPOError(f"Previous action {line!r} is not on this policy's menu.")
            ids.append(self._by_summary[summary])
        return ids

    def _distribution(self, prompts: Sequence[list[int]], temperature: float) -> torch.Tensor:
        """``(B, len(responses))`` log-probabilities after each prompt's history (-inf off the tree)."""
        rows = []
        for prompt in prompts:
            history = tuple(prompt[1:])
            if history not in self._rows:
                raise GRPOError(f"History {list(history)} continues no plan of this menu.")
            rows.append(self._rows[history])
        index = torch.tensor(rows)
        logits = (self.logits[index] / max(temperature, 1e-6)).masked_fill(
            ~self.allowed[index], float("-inf")
        )
        return torch.log_softmax(logits, dim=-1)

    def logprobs(
        self, prompts: Sequence[list[int]], responses: Sequence[list[int]], temperature: float = 1.0
    ) -> torch.Tensor:
        """``(B, 1)`` log-probability of each chosen response, differentiable (0 where the tree forced it)."""
        chosen = torch.tensor([response[0] for response in responses]).unsqueeze(1)
        return self._distribution(prompts, temperature).gather(1, chosen)

    @torch.no_grad()
    def sample(self, prompts: Sequence[list[int]], temperature: float, generator: Any) -> list[Sampled]:
        """Samples one response per prompt among those that continue its history."""
        logp = self._distribution(prompts, temperature)
        picks = torch.multinomial(logp.exp(), 1, generator=generator).squeeze(1).tolist()
        return [Sampled([k], [float(logp[i, k])], self.responses[k]) for i, k in enumerate(picks)]
