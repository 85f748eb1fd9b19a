"""The trainable ``hf:PATH`` policy: a Qwen3-VL class checkpoint that samples and scores its own tokens.

Loading and prompt rendering are ``hybrid_agent``'s ``hf:`` policy's
(:class:`hybrid_agent.policies.hf.HFPolicy`: ``AutoModelForImageTextToText`` and the
checkpoint's processor from a local directory, the processor's chat template with
the generation prompt, images in message order, left padding, the stop at
``</tool_call>``), so evaluation and training see the same prompt tokens.

GRPO needs more than text: the ids of each sampled token with its log-probability
under the sampling distribution, and differentiable log-probabilities of the same
ids later. Sampling is plain temperature sampling (no top-k/top-p, no repetition
penalty, whatever the checkpoint's generation config says), so the stored
log-probabilities are ``log_softmax(logits / T)`` of the tokens drawn, the quantity
:meth:`HFTrainablePolicy.logprobs` recomputes. A prompt is a :class:`VisionPrompt`:
its token ids (what the Trainer compares on replay) carrying the rendered text and
images the processor turns back into pixel inputs when the model runs.

Budgets: a response has at most ``max_new_tokens`` tokens (``[rollout] max_new_tokens``);
a prompt longer than ``max_prompt_tokens`` is not run through the model at all: its
row gets an empty response cut off for length (the agent loop executes nothing and
tells the model; the step is recorded and, having no tokens, adds nothing to the
gradient), so one overlong context never stops a run.

Memory: full-vocabulary fp32 values are never kept for a whole response. Sampling
records each drawn token's log-probability in a logits processor (one ``(B, V)``
distribution alive at a time), and :func:`token_logprobs` scores chunks of positions,
each recomputed in the backward pass instead of saved.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any

import torch
from hybrid_agent.messages import Message, images_of
from hybrid_agent.policies.base import FinishReason, PolicyOptions
from hybrid_agent.policies.hf import STOP, HFPolicy
from torch.utils.checkpoint import checkpoint

from grpo_trainer.model.inputs import InputCache, RopeIndex, collate_packed, collate_padded
from grpo_trainer.model.packing import PACKINGS
from grpo_trainer.model.policy import Sampled

# Tokens (rows x positions) per chunk of full-vocabulary values when scoring: 1,024 x 151,936 fp32 is 0.6 GB.
LOGPROB_CHUNK = 1024


def scaled_log_softmax(logits: torch.Tensor, temperature: float, banned: Sequence[int]) -> torch.Tensor:
    """``log_softmax(logits / T)`` in fp32 over the vocabulary without ``banned`` ids: the sampling law."""
    scaled = logits.float() / max(temperature, 1e-6)
    if banned:
        scaled[..., list(banned)] = float("-inf")
    return torch.log_softmax(scaled, dim=-1)


def _picked(
    logits: torch.Tensor, ids: torch.Tensor, temperature: float, banned: Sequence[int]
) -> torch.Tensor:
    return scaled_log_softmax(logits, temperature, banned).gather(-1, ids.unsqueeze(-1)).squeeze(-1)


def token_logprobs(
    logits: torch.Tensor,
    ids: torch.Tensor,
    temperature: float,
    banned: Sequence[int] = (),
    chunk: int = LOGPROB_CHUNK,
) -> torch.Tensor:
    """``(B, L)`` :func:`scaled_log_softmax` of ``(B, L, V)`` logits at ``ids``, ``chunk`` tokens at a time.

    A whole-sequence log-softmax keeps an fp32 ``(B, L, V)`` copy for the backward pass
    besides the logits; here each chunk is checkpointed, so autograd keeps only the
    logits and rebuilds one chunk's log-softmax when the gradient reaches it.
    """
    positions = max(1, chunk // max(logits.shape[0], 1))
    recompute = torch.is_grad_enabled() and logits.requires_grad
    parts = []
    for part, part_ids in zip(logits.split(positions, dim=1), ids.split(positions, dim=1), strict=True):
        if recompute:
            picked = checkpoint(_picked, part, part_ids, temperature, banned, use_reentrant=False)
        else:
            picked = _picked(part, part_ids, temperature, banned)
        parts.append(picked)
    return torch.cat(parts, dim=1)


class SampledLogprobs:
    """A logits processor that makes the sampling law and keeps the log-probability of each drawn token.

    ``generate`` calls it with the raw fp32 logits of every new position before the token
    is drawn, so the token drawn from one call's distribution is the last of the next
    call's ``input_ids``: one ``(B, V)`` distribution is alive at a time, where
    ``output_logits`` would keep all of them (8 x 8,192 x 151,936 fp32 is 40 GB).
    It returns the log-probabilities themselves as scores (softmax of them is the law),
    so no temperature warper or token suppressor may follow it.
    """

    def __init__(self, temperature: float, banned: Sequence[int]) -> None:
        """Samples at ``temperature`` with ``banned`` ids out of the vocabulary."""
        self.temperature = temperature
        self.banned = list(banned)
        self._last: torch.Tensor | None = None
        self._picked: list[torch.Tensor] = []

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        """The log-probs of the next token; records the previous token's."""
        if self._last is not None:
            self._picked.append(self._last.gather(-1, input_ids[:, -1:]).squeeze(-1))
        self._last = scaled_log_softmax(scores, self.temperature, self.banned)
        return self._last

    def picked(self, sequences: torch.Tensor) -> torch.Tensor:
        """``(B, N)`` log-probs of the ``N`` tokens generated, ``sequences`` being ``generate``'s output."""
        if self._last is None:
            return torch.zeros((sequences.shape[0], 0))
        last = self._last.gather(-1, sequences[:, -1:].to(self._last.device)).squeeze(-1)
        return torch.stack([*self._picked, last], dim=1).cpu()


class VisionPrompt(list[int]):
    """Prompt token ids plus the chat text and images they were encoded from."""

    def __init__(self, ids: Sequence[int], text: str, images: Sequence[Any]) -> None:
        """The ids compare as a plain ``list[int]``; ``text`` and ``images`` rebuild the pixel inputs."""
        super().__init__(ids)
        self.text = text
        self.images = list(images)


class HFTrainablePolicy:
    """A Qwen-VL class model and its processor, sampled and trained token by token.

    Attributes:
        module: The model (``Qwen3VLForConditionalGeneration`` or any image-text-to-text LM).
    """

    def __init__(
        self,
        model: Any,
        processor: Any,
        max_new_tokens: int = 8192,
        max_prompt_tokens: int = 16384,
        packing: str = "padded",
        stop_strings: Sequence[str] = (STOP,),
    ) -> None:
        """Wraps a loaded model and processor (the processor pads on the left, as ``hf:`` does).

        ``packing`` lays out the rows :meth:`logprobs` scores (``[optim] packing``);
        ``stop_strings`` end a response (the agent adapter's: none for HybridCUA's replies of
        several calls).
        """
        if packing not in PACKINGS:
            raise ValueError(f"packing must be one of {PACKINGS}, got {packing!r}.")
        self.packing = packing
        self.module = model
        self.processor = processor
        self.processor.tokenizer.padding_side = "left"
        self.max_new_tokens = max_new_tokens
        self.max_prompt_tokens = max_prompt_tokens
        self.stop_strings = tuple(stop_strings)
        tokenizer = processor.tokenizer
        eos = model.generation_config.eos_token_id
        eos_ids = eos if isinstance(eos, list) else [eos]
        self.end_ids = {i for i in [*eos_ids, tokenizer.eos_token_id] if i is not None}
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos_ids[0]
        # Processed inputs kept while the trainer scores one batch again and again (cached_inputs).
        self.inputs = InputCache()
        # A response may not contain vision placeholders: the model would look for image
        # features behind them. They are masked out of the distribution, in sampling and scoring.
        names = ("image_token_id", "video_token_id", "vision_start_token_id", "vision_end_token_id")
        self.banned = sorted({i for i in (getattr(model.config, n, None) for n in names) if i is not None})

    @classmethod
    def from_pretrained(
        cls,
        path: str,
        device: str = "cpu",
        dtype: str = "float32",
        max_new_tokens: int = 8192,
        max_prompt_tokens: int = 16384,
        packing: str = "padded",
        stop_strings: Sequence[str] = (STOP,),
    ) -> HFTrainablePolicy:
        """Loads a local checkpoint through ``hf:``'s loader, in train mode.

        Args:
            path: The checkpoint directory (nothing is downloaded).
            device: Where the weights go (``cpu`` under DeepSpeed: the engine places them).
            dtype: ``float32`` for the torch backend (autocast does bf16), ``bfloat16`` under
                DeepSpeed bf16 (the engine keeps fp32 masters in the optimizer).
            max_new_tokens: The longest response sampled.
            max_prompt_tokens: The longest prompt sampled after (longer ones get an empty response).
            packing: ``padded`` or ``padding_free`` rows when scoring (``[optim] packing``).
            stop_strings: Strings that end a response (the agent adapter's ``stop``).
        """
        options = PolicyOptions(max_tokens=max_new_tokens, extra={"device": device, "dtype": dtype})
        loaded = HFPolicy.from_pretrained(path, options)
        loaded.model.train()
        return cls(loaded.model, loaded.processor, max_new_tokens, max_prompt_tokens, packing, stop_strings)

    def cached_inputs(self) -> AbstractContextManager[InputCache]:
        """Processes each prompt once until the block ends (one training batch), then forgets them."""
        return self.inputs.batch()

    # --- prompts ---------------------------------------------------------------------------
    def encode(self, messages: Sequence[Message]) -> VisionPrompt:
        """The chat template's prompt (with the generation prompt) as ids, images expanded."""
        text = self.processor.apply_chat_template(list(messages), tokenize=False, add_generation_prompt=True)
        images = images_of(messages)
        ids = self.processor(text=[text], images=images or None, return_tensors="pt")["input_ids"][0]
        return VisionPrompt(ids.tolist(), text, images)

    def _inputs(self, prompts: Sequence[list[int]]) -> dict[str, Any]:
        """The left-padded model inputs of a batch of :class:`VisionPrompt` s, on the model's device.

        Each prompt is processed on its own (from :attr:`inputs` while a training batch is
        open) and collated as the processor's batched call would lay it out.
        """
        parts = [self.inputs.get(prompt, self._process) for prompt in prompts]
        batch = collate_padded(parts, self.pad_id)
        return {key: value.to(self.module.device) for key, value in batch.items()}

    def _process(self, prompt: list[int]) -> dict[str, torch.Tensor]:
        """The processor's inputs of one prompt: ids, attention mask, pixels and grids of its images.

        Pixels come in the model's dtype: the vision tower casts them to it first thing, so a
        bf16 model scores the same, and a cached window of screenshots takes half the memory.
        """
        if not isinstance(prompt, VisionPrompt):
            raise TypeError("HFTrainablePolicy takes the prompts its own encode() returned.")
        images = prompt.images or None
        inputs = dict(self.processor(text=[prompt.text], images=images, return_tensors="pt"))
        dtype = self.module.dtype
        return {key: v.to(dtype) if v.is_floating_point() else v for key, v in inputs.items()}

    # --- sampling --------------------------------------------------------------------------
    @torch.no_grad()
    def sample(self, prompts: Sequence[list[int]], temperature: float, generator: Any) -> list[Sampled]:
        """Samples one response per prompt at ``temperature``; seeded from ``generator``.

        ``generate`` draws from the global RNG, so a seed taken from ``generator`` seeds a
        forked RNG state: the Trainer's checkpointed streams alone decide the samples. A
        prompt over ``max_prompt_tokens`` gets an empty response cut off for length.
        """
        seed = int(torch.randint(0, 2**62, (1,), generator=generator))
        fits = [i for i, prompt in enumerate(prompts) if len(prompt) <= self.max_prompt_tokens]
        results = [Sampled([], [], "", FinishReason.LENGTH) for _ in prompts]
        if fits:
            for i, sampled in zip(
                fits, self._generate([prompts[i] for i in fits], temperature, seed), strict=True
            ):
                results[i] = sampled
        return results

    def _generate(self, prompts: Sequence[list[int]], temperature: float, seed: int) -> list[Sampled]:
        from transformers import GenerationConfig, LogitsProcessorList

        inputs = self._inputs(prompts)
        # The law is made by the recorder alone: a warper or suppressor after it would change it.
        settings = GenerationConfig(
            do_sample=True,
            temperature=1.0,
            top_k=0,
            top_p=1.0,
            repetition_penalty=1.0,
            max_new_tokens=self.max_new_tokens,
            eos_token_id=sorted(self.end_ids),
            pad_token_id=self.pad_id,
            stop_strings=list(self.stop_strings) or None,
            return_dict_in_generate=True,
        )
        recorder = SampledLogprobs(temperature, self.banned)
        device = self.module.device
        with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
            torch.manual_seed(seed)
            out = self.module.generate(
                **inputs,
                generation_config=settings,
                logits_processor=LogitsProcessorList([recorder]),
                tokenizer=self.processor.tokenizer,
            )
        start = inputs["input_ids"].shape[1]
        logps = recorder.picked(out.sequences)
        results = []
        for row in range(len(prompts)):
            ids, ended = self._until_end(out.sequences[row, start:].tolist())
            text = self.processor.tokenizer.decode(ids, skip_special_tokens=True)
            hit = min((text.index(s) + len(s) for s in self.stop_strings if s in text), default=None)
            if hit is not None:
                text = text[:hit]
            reason = FinishReason.STOP if ended else FinishReason.LENGTH
            results.append(Sampled(ids, logps[row, : len(ids)].tolist(), text, reason))
        return results

    def _until_end(self, ids: list[int]) -> tuple[list[int], bool]:
        """The generated ids through the end of turn or the token completing ``</tool_call>``; ended?

        The flag is ``False`` when neither came: ``max_new_tokens`` cut the response off.
        """
        for i, token in enumerate(ids):
            if token in self.end_ids:
                return ids[: i + 1], True
        tokenizer = self.processor.tokenizer
        if STOP in tokenizer.decode(ids):
            for i in range(len(ids)):
                if STOP in tokenizer.decode(ids[: i + 1]):
                    return ids[: i + 1], True
        return ids, False

    # --- scoring ---------------------------------------------------------------------------
    def logprobs(
        self, prompts: Sequence[list[int]], responses: Sequence[list[int]], temperature: float = 1.0
    ) -> torch.Tensor:
        """``(B, L)`` differentiable log-probs of ``responses`` after ``prompts`` (0 past each end).

        Left-padded rows, or one padding-free row with ``packing = "padding_free"``.
        """
        if self.packing == "padding_free":
            return self._packed_logprobs(prompts, responses, temperature)
        inputs = self._inputs(prompts)
        device = self.module.device
        length = max(len(r) for r in responses)
        response = torch.full((len(responses), length), self.pad_id, dtype=torch.long, device=device)
        valid = torch.zeros((len(responses), length), dtype=torch.bool, device=device)
        for row, ids in enumerate(responses):
            response[row, : len(ids)] = torch.tensor(ids, dtype=torch.long)
            valid[row, : len(ids)] = True
        inputs["input_ids"] = torch.cat([inputs["input_ids"], response], dim=1)
        inputs["attention_mask"] = torch.cat([inputs["attention_mask"], valid.long()], dim=1)
        if "mm_token_type_ids" in inputs:  # responses are text
            zeros = torch.zeros_like(response, dtype=inputs["mm_token_type_ids"].dtype)
            inputs["mm_token_type_ids"] = torch.cat([inputs["mm_token_type_ids"], zeros], dim=1)
        logits = self.module(**inputs, logits_to_keep=length + 1).logits[:, :length]
        picked = token_logprobs(logits, response, temperature, self.banned)
        return torch.where(valid, picked, torch.zeros_like(picked))

    def _packed_logprobs(
        self, prompts: Sequence[list[int]], responses: Sequence[list[int]], temperature: float
    ) -> torch.Tensor:
        """:meth:`logprobs` over one padding-free row (:func:`~grpo_trainer.model.inputs.collate_packed`)."""
        parts = [self.inputs.get(prompt, self._process) for prompt in prompts]
        packed, first = collate_packed(parts, responses, self._rope_index())
        device = self.module.device
        inputs = {key: value.to(device) for key, value in packed.items()}
        # Only the logits that predict response tokens: the prompts' would be (T, V) fp32 each.
        keep = torch.tensor([f + k for f, r in zip(first, responses, strict=True) for k in range(len(r))])
        logits = self.module(**inputs, use_cache=False, logits_to_keep=keep.to(device)).logits
        ids = torch.tensor([[t for r in responses for t in r]], dtype=torch.long, device=device)
        picked = token_logprobs(logits, ids, temperature, self.banned)[0]
        rows = picked.split([len(r) for r in responses])
        return torch.nn.utils.rnn.pad_sequence(list(rows), batch_first=True, padding_value=0.0)

    def _rope_index(self) -> RopeIndex | None:
        """The model's multimodal rope index function (Qwen2/2.5/3-VL), wherever its wrappers put it."""
        for module in self.module.modules():
            rope_index = getattr(module, "get_rope_index", None)
            if rope_index is not None:
                return rope_index
        return None
