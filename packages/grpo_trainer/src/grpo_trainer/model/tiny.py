"""A tiny policy built in code: byte tokens, a GRU, decoding constrained to a menu of responses.

It exists so the whole loop (context builder -> tokens -> sampling -> GRPO update)
runs on a CPU in seconds with nothing downloaded. Its distribution is the GRU's
next-byte softmax restricted, at each position, to the bytes that continue some
response of the menu; sampling and :meth:`TinyPolicy.logprobs` apply the same
restriction, so the ratio and the KL are those of the policy that acted. Bytes
forced by the menu have log-probability 0 and no gradient: the choices carry it.
The model reads the last ``context_bytes`` bytes of the rendered prompt, where
the current turn (tool result, previous actions) sits.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from hybrid_agent.messages import Message
from torch import nn

from grpo_trainer.model.policy import Sampled

PAD, BOS, IMAGE = 256, 257, 258
VOCAB = 259
STOP = 0  # every menu response ends with a NUL byte, so "stop here" is a choice too


def render_bytes(messages: Sequence[Message]) -> list[int]:
    """The prompt as bytes: ``<role>`` headers, text parts, one IMAGE token per image."""
    out: list[int] = []
    for message in messages:
        out.extend(f"<{message['role']}>".encode())
        content = message["content"]
        parts = content if isinstance(content, list) else [{"type": "text", "text": content}]
        for part in parts:
            if part["type"] == "image":
                out.append(IMAGE)
            else:
                out.extend(part["text"].encode())
    out.extend(b"<assistant>")
    return out


class PrefixTree:
    """Token sequences as a tree: which tokens may follow a prefix so that some sequence continues.

    :class:`TinyPolicy` restricts each response byte with it;
    :class:`grpo_trainer.model.menu_policy.MenuPolicy` restricts each response of a multi-turn plan.
    """

    def __init__(self, sequences: Sequence[Sequence[int]]) -> None:
        """Builds the tree of ``sequences``."""
        self.root: dict[int, dict] = {}
        for sequence in sequences:
            node = self.root
            for token in sequence:
                node = node.setdefault(token, {})

    def allowed(self, prefix: Sequence[int]) -> list[int]:
        """The tokens that continue ``prefix`` (sorted); ``KeyError`` when no sequence starts with it."""
        node = self.root
        for token in prefix:
            node = node[token]
        return sorted(node)


class TinyPolicy(nn.Module):
    """GRU over bytes; responses restricted to ``choices`` (each ends with a NUL byte)."""

    def __init__(self, choices: Sequence[str], hidden: int = 32, context_bytes: int = 96, seed: int = 0):
        """Builds the model with a seeded init (the same seed gives the same weights)."""
        super().__init__()
        torch.manual_seed(seed)
        self.choices = list(choices)
        self.context_bytes = context_bytes
        self.trie = PrefixTree([[*choice.encode(), STOP] for choice in self.choices])
        self._masks: dict[tuple[int, ...], torch.Tensor] = {}
        self.embed = nn.Embedding(VOCAB, 32)
        self.rnn = nn.GRU(32, hidden, batch_first=True)
        self.head = nn.Linear(hidden, VOCAB)

    @property
    def module(self) -> nn.Module:
        """The trained module: the policy itself."""
        return self

    def encode(self, messages: Sequence[Message]) -> list[int]:
        """The last ``context_bytes`` bytes of the rendered prompt, left-padded."""
        ids = render_bytes(messages)[-self.context_bytes :]
        return [PAD] * (self.context_bytes - len(ids)) + ids

    def _mask(self, responses: Sequence[list[int]], length: int) -> torch.Tensor:
        mask = torch.zeros(len(responses), length, VOCAB, dtype=torch.bool)
        for row, response in enumerate(responses):
            key = tuple(response)
            if key not in self._masks:  # menu responses repeat: build each mask once
                own = torch.zeros(len(response), VOCAB, dtype=torch.bool)
                for pos in range(len(response)):
                    own[pos, self.trie.allowed(response[:pos])] = True
                self._masks[key] = own
            mask[row, : len(response)] = self._masks[key]
        return mask

    def _logits(self, prompts: torch.Tensor, responses: torch.Tensor) -> torch.Tensor:
        inputs = torch.cat([prompts, responses[:, :-1]], dim=1) if responses.shape[1] else prompts
        hidden, _ = self.rnn(self.embed(inputs))
        return self.head(hidden[:, prompts.shape[1] - 1 :])

    def logprobs(
        self, prompts: Sequence[list[int]], responses: Sequence[list[int]], temperature: float = 1.0
    ) -> torch.Tensor:
        """``(B, L)`` restricted log-probabilities of each response byte (0 past its end)."""
        length = max(len(r) for r in responses)
        padded = torch.tensor([r + [STOP] * (length - len(r)) for r in responses])
        logits = self._logits(torch.tensor(list(prompts)), padded)
        mask = self._mask(responses, length)
        logits = (logits / max(temperature, 1e-6)).masked_fill(~mask, float("-inf"))
        picked = torch.log_softmax(logits, dim=-1).gather(-1, padded.unsqueeze(-1)).squeeze(-1)
        valid = torch.tensor([[p < len(r) for p in range(length)] for r in responses])
        return torch.where(valid, picked, torch.zeros_like(picked))

    @torch.no_grad()
    def sample(self, prompts: Sequence[list[int]], temperature: float, generator: Any) -> list[Sampled]:
        """Samples a menu response per prompt, byte by byte."""
        hidden, state = self.rnn(self.embed(torch.tensor(list(prompts))))
        last = hidden[:, -1]
        rows: list[list[int]] = [[] for _ in prompts]
        logps: list[list[float]] = [[] for _ in prompts]
        done = [False] * len(prompts)
        while not all(done):
            logits = (self.head(last) / max(temperature, 1e-6)).float()  # bf16 weights: sample in fp32
            step = []
            for row in range(len(prompts)):
                if done[row]:
                    step.append(STOP)
                    continue
                allowed = self.trie.allowed(rows[row])
                restricted = torch.full((VOCAB,), float("-inf"))
                restricted[allowed] = logits[row, allowed]
                probs = torch.softmax(restricted, dim=-1)
                byte = int(torch.multinomial(probs, 1, generator=generator))
                rows[row].append(byte)
                logps[row].append(float(torch.log(probs[byte])))
                done[row] = byte == STOP
                step.append(byte)
            out, state = self.rnn(self.embed(torch.tensor(step).unsqueeze(1)), state)
            last = out[:, -1]
        return [Sampled(ids, lp, bytes(ids[:-1]).decode()) for ids, lp in zip(rows, logps, strict=True)]
