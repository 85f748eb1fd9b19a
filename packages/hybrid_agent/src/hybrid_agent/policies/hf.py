"""``hf:PATH``: a local transformers checkpoint of the Qwen3-VL class, batched over envs.

Loads ``AutoModelForImageTextToText`` and the checkpoint's processor from
``PATH`` (a directory; nothing is downloaded), renders every request with the
processor's chat template, pads on the left and generates for the whole batch at
once, greedy by default, stopping each row at ``</tool_call>`` (or the end of
turn); a row that used all of ``max_tokens`` without either is ``finish_reason =
"length"`` (the agent loop then executes nothing for it). Token usage is exact:
prompt tokens are the row's attention mask, output tokens what was generated
before the stop.

torch and transformers are the ``hf`` extra (``pip install 'hybrid-agent[hf]'``);
they are imported when the policy is built, never by ``import hybrid_agent``.
``PolicyOptions.extra`` may set ``device`` (default: ``cuda`` when available) and
``dtype`` (``bfloat16``, ``float32`` ...).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from hybrid_agent.errors import ConfigError
from hybrid_agent.policies.base import (
    TOOL_CALL_STOP,
    FinishReason,
    Generation,
    PolicyOptions,
    PolicyRequest,
    register_policy,
)

STOP = TOOL_CALL_STOP


class HFPolicy:
    """Batched local generation with a Qwen-VL class model."""

    def __init__(
        self, model: Any, processor: Any, options: PolicyOptions | None = None, name: str = "hf"
    ) -> None:
        """Wraps a loaded model and processor (see :meth:`from_pretrained`)."""
        self.model = model
        self.processor = processor
        self.options = options or PolicyOptions()
        self.name = name
        self.processor.tokenizer.padding_side = "left"

    @classmethod
    def from_pretrained(cls, path: str, options: PolicyOptions | None = None) -> HFPolicy:
        """Loads model and processor from a local directory.

        Raises:
            ConfigError: torch/transformers are missing, or the directory does not load.
        """
        options = options or PolicyOptions()
        try:
            import torch
            from transformers import AutoModelForImageTextToText, AutoProcessor
        except ImportError as exc:
            raise ConfigError(
                "hf: policies need torch and transformers: pip install 'hybrid-agent[hf]'."
            ) from exc
        device = options.extra.get("device") or ("cuda" if torch.cuda.is_available() else "cpu")
        dtype = getattr(torch, options.extra.get("dtype", "bfloat16" if device != "cpu" else "float32"))
        try:
            processor = AutoProcessor.from_pretrained(path)
            model = AutoModelForImageTextToText.from_pretrained(path, torch_dtype=dtype)
            # transformers declares ``to`` through functools.wraps(Module.to): mypy reads the unbound
            # signature and takes ``device`` for ``self``.
            model = model.to(device).eval()  # type: ignore[arg-type]
        except (OSError, ValueError) as exc:
            raise ConfigError(f"hf: cannot load a Qwen-VL checkpoint from {path!r}: {exc}") from exc
        return cls(model, processor, options, name=f"hf:{path}")

    def generate(self, requests: Sequence[PolicyRequest]) -> list[Generation]:
        """One batched ``generate`` for every request."""
        import torch

        started = time.perf_counter()
        texts: list[str] = []
        images: list[Any] = []  # the messages' image parts (PIL images), as the processor takes them
        for request in requests:
            texts.append(
                self.processor.apply_chat_template(
                    request.messages, tokenize=False, add_generation_prompt=True
                )
            )
            images.extend(
                part["image"]
                for message in request.messages
                if isinstance(message["content"], list)
                for part in message["content"]
                if part["type"] == "image"
            )
        inputs = self.processor(text=texts, images=images or None, padding=True, return_tensors="pt")
        inputs = inputs.to(self.model.device)
        sample = self.options.temperature > 0
        kwargs: dict[str, Any] = {
            "max_new_tokens": self.options.max_tokens,
            "do_sample": sample,
            "eos_token_id": self._end_ids(),
        }
        if sample:
            kwargs["temperature"] = self.options.temperature
        stop = list(requests[0].stop) if requests else [STOP]  # one batch, one adapter
        if stop:
            kwargs["stop_strings"] = stop
        with torch.inference_mode():
            output = self.model.generate(**inputs, tokenizer=self.processor.tokenizer, **kwargs)
        prompt_len = inputs["input_ids"].shape[1]
        prompt_tokens = inputs["attention_mask"].sum(dim=1).tolist()
        latency = time.perf_counter() - started
        return [
            self._decode(row[prompt_len:], int(prompt_tokens[i]), latency, stop)
            for i, row in enumerate(output)
        ]

    def _end_ids(self) -> list[int]:
        """The ids that end a reply: the checkpoint's generation eos and the chat's end of turn.

        A checkpoint saved without a generation config (a fine-tuned export, a model built in
        code) names no eos; the tokenizer's (``<|im_end|>`` for Qwen) still ends the turn.
        """
        eos = self.model.generation_config.eos_token_id
        ids = eos if isinstance(eos, list) else [eos]
        return sorted({i for i in [*ids, self.processor.tokenizer.eos_token_id] if i is not None})

    def _decode(self, new_tokens: Any, prompt_tokens: int, latency: float, stop: list[str]) -> Generation:
        tokenizer = self.processor.tokenizer
        ids = new_tokens.tolist()
        generated = len(ids)
        pad = tokenizer.pad_token_id
        while ids and ids[-1] == pad:
            ids.pop()
        text = tokenizer.decode(ids, skip_special_tokens=True)
        hit = min((text.index(s) + len(s) for s in stop if s in text), default=None)
        ended = hit is not None or tokenizer.eos_token_id in ids or len(ids) < generated
        if hit is not None:
            text = text[:hit]
        # A row that used the whole budget without a stop string or end of turn was cut off.
        cut = not ended and generated >= self.options.max_tokens
        return Generation(
            text=text,
            input_tokens=prompt_tokens,
            output_tokens=len(ids),
            latency_s=latency,
            finish_reason=FinishReason.LENGTH if cut else FinishReason.STOP,
        )


@register_policy("hf")
def _hf(rest: str, options: PolicyOptions) -> HFPolicy:
    if not rest:
        raise ConfigError("hf policy spec must be 'hf:PATH' (a local checkpoint directory).")
    return HFPolicy.from_pretrained(rest, options)
