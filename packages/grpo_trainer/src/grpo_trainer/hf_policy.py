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
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from hybrid_agent.messages import Message, images_of
from hybrid_agent.policies.base import FinishReason, PolicyOptions
from hybrid_agent.policies.hf import STOP, HFPolicy

from grpo_trainer.policy import Sampled


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

    def __init__(self, model: Any, processor: Any, max_new_tokens: int = 256) -> None:
        """Wraps a loaded model and processor (the processor pads on the left, as ``hf:`` does)."""
        self.module = model
        self.processor = processor
        self.processor.tokenizer.padding_side = "left"
        self.max_new_tokens = max_new_tokens
        tokenizer = processor.tokenizer
        eos = model.generation_config.eos_token_id
        eos_ids = eos if isinstance(eos, list) else [eos]
        self.end_ids = {i for i in [*eos_ids, tokenizer.eos_token_id] if i is not None}
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos_ids[0]
        # A response may not contain vision placeholders: the model would look for image
        # features behind them. They are masked out of the distribution, in sampling and scoring.
        names = ("image_token_id", "video_token_id", "vision_start_token_id", "vision_end_token_id")
        self.banned = sorted({i for i in (getattr(model.config, n, None) for n in names) if i is not None})

    @classmethod
    def from_pretrained(
        cls, path: str, device: str = "cpu", dtype: str = "float32", max_new_tokens: int = 256
    ) -> HFTrainablePolicy:
        """Loads a local checkpoint through ``hf:``'s loader, in train mode.

        Args:
            path: The checkpoint directory (nothing is downloaded).
            device: Where the weights go (``cpu`` under DeepSpeed: the engine places them).
            dtype: ``float32`` for the torch backend (autocast does bf16), ``bfloat16`` under
                DeepSpeed bf16 (the engine keeps fp32 masters in the optimizer).
            max_new_tokens: The longest response sampled.
        """
        options = PolicyOptions(max_tokens=max_new_tokens, extra={"device": device, "dtype": dtype})
        loaded = HFPolicy.from_pretrained(path, options)
        loaded.model.train()
        return cls(loaded.model, loaded.processor, max_new_tokens)

    # --- prompts ---------------------------------------------------------------------------
    def encode(self, messages: Sequence[Message]) -> VisionPrompt:
        """The chat template's prompt (with the generation prompt) as ids, images expanded."""
        text = self.processor.apply_chat_template(list(messages), tokenize=False, add_generation_prompt=True)
        images = images_of(messages)
        ids = self.processor(text=[text], images=images or None, return_tensors="pt")["input_ids"][0]
        return VisionPrompt(ids.tolist(), text, images)

    def _inputs(self, prompts: Sequence[list[int]]) -> dict[str, Any]:
        """The left-padded model inputs of a batch of :class:`VisionPrompt` s."""
        texts, images = [], []
        for prompt in prompts:
            if not isinstance(prompt, VisionPrompt):
                raise TypeError("HFTrainablePolicy takes the prompts its own encode() returned.")
            texts.append(prompt.text)
            images.extend(prompt.images)
        batch = self.processor(text=texts, images=images or None, padding=True, return_tensors="pt")
        return dict(batch.to(self.module.device))

    # --- sampling --------------------------------------------------------------------------
    @torch.no_grad()
    def sample(self, prompts: Sequence[list[int]], temperature: float, generator: Any) -> list[Sampled]:
        """Samples one response per prompt at ``temperature``; seeded from ``generator``.

        ``generate`` draws from the global RNG, so a seed taken from ``generator`` seeds a
        forked RNG state: the Trainer's checkpointed streams alone decide the samples.
        """
        from transformers import GenerationConfig

        inputs = self._inputs(prompts)
        settings = GenerationConfig(
            do_sample=True,
            temperature=max(temperature, 1e-6),
            top_k=0,
            top_p=1.0,
            max_new_tokens=self.max_new_tokens,
            eos_token_id=sorted(self.end_ids),
            pad_token_id=self.pad_id,
            suppress_tokens=self.banned or None,
            stop_strings=[STOP],
            output_logits=True,
            return_dict_in_generate=True,
        )
        seed = int(torch.randint(0, 2**62, (1,), generator=generator))
        device = self.module.device
        with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
            torch.manual_seed(seed)
            out = self.module.generate(
                **inputs, generation_config=settings, tokenizer=self.processor.tokenizer
            )
        start = inputs["input_ids"].shape[1]
        logps = self._logps(torch.stack(out.logits, dim=1), temperature)
        results = []
        for row in range(len(prompts)):
            ids, ended = self._until_end(out.sequences[row, start:].tolist())
            picked = logps[row, torch.arange(len(ids)), torch.tensor(ids, dtype=torch.long)]
            text = self.processor.tokenizer.decode(ids, skip_special_tokens=True)
            if STOP in text:
                text = text[: text.index(STOP) + len(STOP)]
            reason = FinishReason.STOP if ended else FinishReason.LENGTH
            results.append(Sampled(ids, picked.tolist(), text, reason))
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

    def _logps(self, logits: torch.Tensor, temperature: float) -> torch.Tensor:
        """``log_softmax(logits / T)`` in fp32 over the vocabulary without the vision placeholders."""
        scaled = logits.float() / max(temperature, 1e-6)
        if self.banned:
            scaled[..., self.banned] = float("-inf")
        return torch.log_softmax(scaled, dim=-1)

    # --- scoring ---------------------------------------------------------------------------
    def logprobs(
        self, prompts: Sequence[list[int]], responses: Sequence[list[int]], temperature: float = 1.0
    ) -> torch.Tensor:
        """``(B, L)`` differentiable log-probs of ``responses`` after ``prompts`` (0 past each end)."""
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
        logps = self._logps(logits, temperature)
        picked = logps.gather(-1, response.unsqueeze(-1)).squeeze(-1)
        return torch.where(valid, picked, torch.zeros_like(picked))
