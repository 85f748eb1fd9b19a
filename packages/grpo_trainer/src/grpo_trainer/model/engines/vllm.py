"""``[rollout] engine = "vllm"``: a colocated vLLM engine samples, token in and token out.

Written against vLLM 0.11's documented offline API (``vllm.LLM``, ``SamplingParams``,
``TokensPrompt``, ``LoRARequest``, ``LLM.sleep``/``wake_up`` of the sleep-mode guide,
``LLM.apply_model``, ``LLM.reset_prefix_cache``, the ``logprobs_mode`` engine argument).
``vllm`` is imported when the engine is built; without it the error says how to get it.

Token in, token out. A prompt goes in as the ids :meth:`HFTrainablePolicy.encode` made with
its images as ``multi_modal_data``, so vLLM's tokenizer and chat template never run. Those
ids hold each image expanded to its N ``<|image_pad|>`` tokens; vLLM expects one pad per
image in a token prompt and expands it itself (0.11: ``multimodal/processing.py``; 0.33:
``multimodal/processing/processor.py``): a prompt sent expanded gets the first pad expanded
again, and is sampled from a context the trainer never scores, without an error. So each run
of pads goes in as one (:func:`collapse_image_pads`), and the ids vLLM reports it sampled from
(``prompt_token_ids``) must equal the stored ones, or :class:`PromptMismatch` says where they
part. The response comes
back as ids with the log-probability of each sampled token (``logprobs=0``: the sampled
token only). ``logprobs_mode="processed_logprobs"`` makes those the log-probs of the law
tokens were drawn from (after temperature), the quantity the trainer recomputes; vision
placeholder ids are banned with a large negative logit bias, as the ``hf`` engine bans them.
Sampling is plain temperature sampling (``top_k``/``top_p`` off), each request seeded
from the Trainer's generator.

Colocated. Under several ranks (``WORLD_SIZE`` > 1) each rank's engine is vLLM's
``external_launcher`` on that rank's GPU (``LOCAL_RANK``), in the launcher's process group,
which it initialises before vLLM starts (:func:`join_process_group`). The engine takes
``gpu_memory_utilization`` of the GPU (0.35 by default, an
``engine_options`` key) beside the trainer. It is awake for a step's rollouts and sleeps
during the updates (:meth:`VLLMEngine.generating`): level 2 for full fine-tuning (weights
discarded, all of them are loaded again), level 1 with LoRA (base weights kept on the CPU).
After each update phase :meth:`VLLMEngine.sync_weights` wakes the weights alone and loads
the trained ones: full fine-tuning gathers each parameter in turn (ZeRO-3:
``deepspeed.zero.GatheredParameters`` of that one parameter, so no rank holds the whole
model) and passes it to the vLLM model's ``load_weights`` under its Hugging Face name;
LoRA saves the adapter alone and points the next requests at it. The seconds are logged
(``time/weight_sync_s``). The KV cache wakes when the next rollout starts, after
``torch.cuda.empty_cache()`` hands the update's cached blocks back to the GPU for it.

vLLM runs in this process (``VLLM_ENABLE_V1_MULTIPROCESSING=0``, as TRL's colocate mode
does) so ``apply_model`` hands tensors over without pickling them.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import torch
from hybrid_agent.policies.base import FinishReason
from hybrid_agent.policies.hf import STOP

from grpo_trainer.config import lora_capacity
from grpo_trainer.errors import ConfigError, GRPOError
from grpo_trainer.model.engines import register_engine
from grpo_trainer.model.policy import Sampled, TrainablePolicy

if TYPE_CHECKING:
    from grpo_trainer.config import GRPOConfig
    from grpo_trainer.training.backend import Backend

# A banned id's logit bias: exp(-1e9) is 0 in fp32, so the law is the hf engine's -inf mask.
BANNED_BIAS = -1e9
DEFAULT_OPTIONS: dict[str, Any] = {"gpu_memory_utilization": 0.35, "enforce_eager": False}


class VLLMMissing(ConfigError):
    """``[rollout] engine = "vllm"`` without the ``vllm`` package."""


class PromptMismatch(GRPOError, RuntimeError):
    """vLLM sampled from other prompt ids than the ones the trainer stores and scores."""


def collapse_image_pads(ids: Sequence[int], pad: int) -> list[int]:
    """``ids`` with each run of ``pad`` (one image's expansion) as a single ``pad``, vLLM's input."""
    out: list[int] = []
    for token in ids:
        if not (token == pad and out and out[-1] == pad):
            out.append(token)
    return out


def import_vllm() -> Any:
    """The ``vllm`` module, or :class:`VLLMMissing` saying what to install."""
    try:
        import vllm  # type: ignore[import-not-found]  # optional: a GPU and the vllm package
    except ImportError as exc:
        raise VLLMMissing(
            "[rollout] engine = 'vllm' needs the vllm package (a CUDA GPU and `pip install vllm`, "
            f"matching the installed torch); got: {exc}. Use engine = 'hf' to sample in-process."
        ) from exc
    return vllm


def join_process_group() -> None:
    """This rank's GPU selected and the launcher's process group up, before vLLM starts.

    Without them every rank's engine lands on ``cuda:0`` and vLLM creates a world of one of its
    own; DeepSpeed's ``init_distributed`` later finds the group up and keeps it.
    """
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    if not torch.distributed.is_initialized():
        torch.distributed.init_process_group(backend="nccl")  # env:// from the launcher


@contextlib.contextmanager
def gathered(param: torch.nn.Parameter) -> Iterator[torch.Tensor]:
    """``param``'s full tensor: gathered for the block when ZeRO-3 partitions it (``ds_id`` set)."""
    if not hasattr(param, "ds_id"):
        yield param.data
        return
    import deepspeed

    with deepspeed.zero.GatheredParameters([param], modifier_rank=None):
        yield param.data


class VLLMEngine:
    """A vLLM ``LLM`` on the trainer's GPU, sampling for an ``hf:`` policy's prompts."""

    shares_weights = False

    def __init__(
        self,
        policy: Any,
        path: str,
        max_model_len: int,
        seed: int,
        lora_rank: int | None = None,
        options: dict[str, Any] | None = None,
    ) -> None:
        """Starts the engine on the checkpoint at ``path``.

        Args:
            policy: The :class:`~grpo_trainer.model.hf_policy.HFTrainablePolicy` whose prompts it
                samples (its end ids, banned ids and budgets are the engine's).
            path: The ``hf:PATH`` directory (the same weights the trainer loaded).
            max_model_len: Prompt plus response budget.
            seed: The engine's seed (each request has its own too).
            lora_rank: The LoRA rank when the trainer trains adapters (vLLM serves them).
            options: More ``vllm.LLM`` keyword arguments (``[rollout] engine_options``).
        """
        os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        vllm = import_vllm()
        self._vllm = vllm
        self.policy = policy
        self.lora_rank = lora_rank
        settings = {**DEFAULT_OPTIONS, **(options or {})}
        if lora_rank is not None:
            settings.update(enable_lora=True, max_lora_rank=lora_capacity(lora_rank), max_loras=1)
        if int(os.environ.get("WORLD_SIZE", "1")) > 1:
            join_process_group()
            settings.setdefault("distributed_executor_backend", "external_launcher")
        self.image_pad = int(policy.processor.image_token_id)
        self.llm = vllm.LLM(
            model=path,
            enable_sleep_mode=True,
            logprobs_mode="processed_logprobs",
            max_model_len=max_model_len,
            seed=seed,
            **settings,
        )
        self._lora: Any = None
        self._lora_dir = tempfile.TemporaryDirectory(prefix="grpo-vllm-lora-")
        self._adapters = 0
        self._sleeping: list[str] = []  # the sleep-mode tags released: "weights", "kv_cache"
        self._stale_prefixes = False

    # --- sampling --------------------------------------------------------------------------
    def sample(self, prompts: Sequence[list[int]], temperature: float, generator: Any) -> list[Sampled]:
        """One response per prompt; an over-budget prompt gets an empty one cut off for length."""
        results = [Sampled([], [], "", FinishReason.LENGTH) for _ in prompts]
        fits = [i for i, p in enumerate(prompts) if len(p) <= self.policy.max_prompt_tokens]
        seeds = torch.randint(0, 2**31 - 1, (len(fits),), generator=generator).tolist()
        if not fits:
            return results
        requests = [self._request(prompts[i]) for i in fits]
        params = [self._params(temperature, int(s)) for s in seeds]
        outputs = self.llm.generate(requests, params, use_tqdm=False, lora_request=self._lora)
        for i, output in zip(fits, outputs, strict=True):
            self._check_prompt(prompts[i], output.prompt_token_ids)
            results[i] = self._sampled(output.outputs[0])
        return results

    @staticmethod
    def _check_prompt(stored: Sequence[int], sampled_from: Sequence[int]) -> None:
        stored, sampled_from = list(stored), list(sampled_from)
        if stored != sampled_from:
            at = next(
                (k for k, (a, b) in enumerate(zip(stored, sampled_from, strict=False)) if a != b),
                min(len(stored), len(sampled_from)),
            )
            raise PromptMismatch(
                f"vLLM sampled from {len(sampled_from)} prompt ids where the trainer stores {len(stored)}; "
                f"they part at position {at}: its image expansion differs from the processor's."
            )

    def _request(self, prompt: list[int]) -> dict[str, Any]:
        request: dict[str, Any] = {"prompt_token_ids": collapse_image_pads(prompt, self.image_pad)}
        images = getattr(prompt, "images", None)
        if images:
            request["multi_modal_data"] = {"image": list(images)}
        return request

    def _params(self, temperature: float, seed: int) -> Any:
        return self._vllm.SamplingParams(
            temperature=temperature,
            top_p=1.0,
            top_k=0,
            max_tokens=self.policy.max_new_tokens,
            logprobs=0,
            seed=seed,
            stop=list(getattr(self.policy, "stop_strings", (STOP,))) or None,
            include_stop_str_in_output=True,
            stop_token_ids=sorted(self.policy.end_ids),
            logit_bias={int(i): BANNED_BIAS for i in self.policy.banned} or None,
            skip_special_tokens=True,
        )

    @staticmethod
    def _sampled(completion: Any) -> Sampled:
        ids = list(completion.token_ids)
        logprobs = [float(completion.logprobs[k][token].logprob) for k, token in enumerate(ids)]
        reason = FinishReason.STOP if completion.finish_reason == "stop" else FinishReason.LENGTH
        return Sampled(ids, logprobs, completion.text, reason)

    # --- colocation ------------------------------------------------------------------------
    @contextlib.contextmanager
    def generating(self, backend: Backend) -> Iterator[None]:
        """Awake (weights and KV cache) for the rollouts, asleep after them for the updates."""
        self._wake(*self._sleeping)
        if self._stale_prefixes:  # cached prefixes were computed by the old weights
            self.llm.reset_prefix_cache()
            self._stale_prefixes = False
        try:
            yield
        finally:
            self.llm.sleep(level=1 if self.lora_rank is not None else 2)
            self._sleeping = ["weights", "kv_cache"]

    def _wake(self, *tags: str) -> None:
        if "kv_cache" in tags:  # the update's cached allocator blocks would keep the cache from fitting
            torch.cuda.empty_cache()
        if tags:
            self.llm.wake_up(tags=list(tags))
            self._sleeping = [t for t in self._sleeping if t not in tags]

    def sync_weights(self, module: Any) -> dict[str, float]:
        """Loads the trained weights (or the LoRA adapter) into the engine; its KV cache sleeps on. Timed."""
        started = time.perf_counter()
        if "weights" in self._sleeping:
            self._wake("weights")
        tensors = self._load_adapter(module) if self.lora_rank is not None else self._load_full(module)
        self._stale_prefixes = True
        return {"time/weight_sync_s": time.perf_counter() - started, "engine/synced_tensors": float(tensors)}

    def _load_full(self, module: Any) -> int:
        count = 0
        for name, param in module.named_parameters():
            with gathered(param) as tensor:
                self.llm.apply_model(lambda model, n=name, t=tensor: model.load_weights([(n, t)]))
            count += 1
        return count

    def _load_adapter(self, module: Any) -> int:
        from vllm.lora.request import LoRARequest  # type: ignore[import-not-found]

        self._adapters += 1
        folder = os.path.join(self._lora_dir.name, f"v{self._adapters}")
        trainable = [p for p in module.parameters() if p.requires_grad]
        with contextlib.ExitStack() as stack:
            for param in trainable:
                stack.enter_context(gathered(param))
            module.save_pretrained(folder)  # PEFT writes the adapter alone
        self._lora = LoRARequest(f"policy-v{self._adapters}", self._adapters, folder)
        return len(trainable)


def _vllm(config: GRPOConfig, policy: TrainablePolicy) -> VLLMEngine:
    if not config.policy.startswith("hf:"):
        raise ConfigError(f"[rollout] engine = 'vllm' needs an hf:PATH policy, got {config.policy!r}.")
    rollout = config.rollout
    lora = config.model.lora
    return VLLMEngine(
        policy,
        config.policy.removeprefix("hf:"),
        max_model_len=rollout.max_prompt_tokens + rollout.max_new_tokens,
        seed=config.engine.seed,
        lora_rank=lora.r if lora is not None else None,
        options=rollout.engine_options,
    )


register_engine("vllm", _vllm)
