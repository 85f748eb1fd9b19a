"""The vLLM engine against a stand-in ``vllm`` module that expands image placeholders as vLLM does.

vLLM takes a token prompt with one ``<|image_pad|>`` per image and replaces each of the first
``len(images)`` pads by that image's N pads (N from the HF image processor's grid: t*h*w / merge²;
0.11 ``multimodal/processing.py``, 0.33 ``multimodal/processing/processor.py``); it reports the
ids it sampled from as ``prompt_token_ids``. The stand-in does exactly that, and records every
call, so the engine's requests, sampling parameters, sleep/wake order, weight sync and LoRA
requests are checked here without a GPU.
"""

import sys
import types
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from grpo_trainer.config import GRPOConfig, LoraSettings, ModelSettings, RolloutSettings
from grpo_trainer.errors import ConfigError
from grpo_trainer.model.engines import vllm as engine_module
from grpo_trainer.model.engines.vllm import BANNED_BIAS, PromptMismatch, VLLMEngine, collapse_image_pads
from hybrid_agent.messages import image_part, text_part
from PIL import Image
from tiny_vlm import tiny_vlm_policy


class StandInLLM:
    def __init__(self, policy, calls, **settings):
        self.processor, self.calls, self.settings = policy.processor, calls, settings
        self.loaded = []
        calls.append(("init",))

    def _expand(self, request):
        ids, images = list(request["prompt_token_ids"]), request.get("multi_modal_data", {}).get("image", [])
        pad, merge = self.processor.image_token_id, self.processor.image_processor.merge_size
        start = 0
        for image in images:  # the next pad after the last expansion becomes this image's N pads
            grid = self.processor.image_processor(images=[image], return_tensors="pt")["image_grid_thw"][0]
            n = int(grid.prod()) // merge**2
            at = ids.index(pad, start)
            ids[at : at + 1] = [pad] * n
            start = at + n
        return ids

    def generate(self, requests, params, use_tqdm, lora_request):
        self.calls.append(("generate", lora_request))
        self.requests, self.params = requests, params
        outputs = []
        for request, p in zip(requests, params, strict=True):
            token_ids = [7, 8, 9][: p.max_tokens]
            logprobs = [{t: SimpleNamespace(logprob=-0.5 * (k + 1))} for k, t in enumerate(token_ids)]
            completion = SimpleNamespace(
                token_ids=token_ids, logprobs=logprobs, finish_reason="length", text=""
            )
            outputs.append(SimpleNamespace(prompt_token_ids=self._expand(request), outputs=[completion]))
        return outputs

    def sleep(self, level):
        self.calls.append(("sleep", level))

    def wake_up(self, tags):
        self.calls.append(("wake", tuple(tags)))

    def reset_prefix_cache(self):
        self.calls.append(("reset_prefix_cache",))

    def apply_model(self, function):
        model = SimpleNamespace(load_weights=lambda weights: self.loaded.extend(n for n, _ in weights))
        return function(model)


@pytest.fixture
def standin(monkeypatch):
    """Installs the stand-in ``vllm`` (and ``vllm.lora.request``); returns its call log."""
    calls = []
    policy = tiny_vlm_policy(max_new_tokens=3)
    vllm = types.ModuleType("vllm")
    vllm.LLM = lambda **settings: StandInLLM(policy, calls, **settings)
    vllm.SamplingParams = lambda **kw: SimpleNamespace(**kw)
    request = types.ModuleType("vllm.lora.request")
    request.LoRARequest = lambda name, id_, path: SimpleNamespace(name=name, id=id_, path=path)
    for name, module in {
        "vllm": vllm,
        "vllm.lora": types.ModuleType("vllm.lora"),
        "vllm.lora.request": request,
    }.items():
        monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: calls.append(("empty_cache",)))
    return SimpleNamespace(policy=policy, calls=calls)


def _prompts(policy, sizes=((96, 64), (64, 64))):
    images = [Image.new("RGB", size, (30 * i, 90, 160)) for i, size in enumerate(sizes)]
    content = [*(image_part(i) for i in images), text_part("put 5 in A1")]
    return [
        policy.encode([{"role": "user", "content": content}]),
        policy.encode([{"role": "user", "content": [text_part("no image")]}]),
    ]


def test_collapse_keeps_one_pad_per_run():
    assert collapse_image_pads([1, 5, 5, 5, 2, 1, 5, 5, 2, 3], pad=5) == [1, 5, 2, 1, 5, 2, 3]
    assert collapse_image_pads([5], pad=5) == [5] and collapse_image_pads([1, 2], pad=5) == [1, 2]


def test_images_go_unexpanded_and_vllm_samples_from_the_stored_ids(standin):
    policy = standin.policy
    engine = VLLMEngine(policy, "/ckpt", max_model_len=4096, seed=3)
    prompts = _prompts(policy)
    pad = policy.processor.image_token_id
    assert list(prompts[0]).count(pad) > 2  # the stored ids hold both images expanded
    sampled = engine.sample(prompts, 1.0, torch.Generator().manual_seed(0))
    with_images, text_only = engine.llm.requests
    assert with_images["prompt_token_ids"].count(pad) == 2  # one pad per image, as vLLM expects
    assert len(with_images["multi_modal_data"]["image"]) == 2
    assert text_only == {"prompt_token_ids": list(prompts[1])}
    assert [s.ids for s in sampled] == [[7, 8, 9], [7, 8, 9]]
    assert sampled[0].logprobs == [-0.5, -1.0, -1.5]


def test_a_prompt_sent_expanded_is_refused(standin, monkeypatch):
    """Today's bug: the expanded ids sent as they are get their first pad expanded again."""
    monkeypatch.setattr(engine_module, "collapse_image_pads", lambda ids, pad: list(ids))
    engine = VLLMEngine(standin.policy, "/ckpt", max_model_len=4096, seed=3)
    with pytest.raises(PromptMismatch, match="part at position"):
        engine.sample(_prompts(standin.policy), 1.0, torch.Generator().manual_seed(0))


def test_the_sampling_parameters_are_the_recorded_law(standin):
    policy = standin.policy
    engine = VLLMEngine(policy, "/ckpt", max_model_len=4096, seed=3, options={"enforce_eager": True})
    settings = engine.llm.settings
    assert settings["enable_sleep_mode"] and settings["logprobs_mode"] == "processed_logprobs"
    assert settings["enforce_eager"] is True and settings["gpu_memory_utilization"] == 0.35
    assert "distributed_executor_backend" not in settings  # one rank
    engine.sample(_prompts(policy), 0.7, torch.Generator().manual_seed(0))
    first, second = engine.llm.params
    want_seeds = torch.randint(0, 2**31 - 1, (2,), generator=torch.Generator().manual_seed(0)).tolist()
    assert [first.seed, second.seed] == want_seeds
    assert (first.temperature, first.top_p, first.top_k, first.logprobs) == (0.7, 1.0, 0, 0)
    assert first.max_tokens == policy.max_new_tokens and first.stop_token_ids == sorted(policy.end_ids)
    assert first.logit_bias == {int(i): BANNED_BIAS for i in policy.banned}


def test_sleep_wake_and_weight_sync_order(standin):
    policy = standin.policy
    engine = VLLMEngine(policy, "/ckpt", max_model_len=4096, seed=3)
    calls = standin.calls
    calls.clear()
    prompts = _prompts(policy)
    with engine.generating(None):
        engine.sample(prompts, 1.0, torch.Generator().manual_seed(0))
    synced = engine.sync_weights(policy.module)
    with engine.generating(None):
        engine.sample(prompts, 1.0, torch.Generator().manual_seed(1))
    assert calls == [
        ("generate", None),
        ("sleep", 2),  # full fine-tuning: the weights are discarded, all come back
        ("wake", ("weights",)),
        ("empty_cache",),  # the update's cached blocks go back before the KV cache wakes
        ("wake", ("kv_cache",)),
        ("reset_prefix_cache",),  # prefixes computed by the old weights
        ("generate", None),
        ("sleep", 2),
    ]
    names = [n for n, _ in policy.module.named_parameters()]
    assert engine.llm.loaded == names and synced["engine/synced_tensors"] == len(names)


def test_lora_adapters_are_served_as_requests(standin):
    from grpo_trainer.model.setup import prepare_policy
    from update_setup import vlm_config

    policy = standin.policy
    prepare_policy(policy, vlm_config(lora=LoraSettings(r=4)))
    engine = VLLMEngine(policy, "/ckpt", max_model_len=4096, seed=3, lora_rank=4)
    settings = engine.llm.settings
    assert (settings["enable_lora"], settings["max_lora_rank"], settings["max_loras"]) == (True, 8, 1)
    engine.sample(_prompts(policy), 1.0, torch.Generator().manual_seed(0))
    engine.sync_weights(policy.module)
    with engine.generating(None):
        engine.sample(_prompts(policy), 1.0, torch.Generator().manual_seed(0))
    lora = [c[1] for c in standin.calls if c[0] == "generate"]
    assert lora[0] is None and lora[1].name == "policy-v1" and lora[1].id == 1
    assert ("sleep", 1) in standin.calls  # LoRA keeps the base weights
    assert (Path(lora[1].path) / "adapter_config.json").exists()  # PEFT wrote the adapter alone


def test_a_lora_rank_vllm_cannot_serve_is_refused_in_the_config():
    def config(r):
        lora = ModelSettings(lora=LoraSettings(r=r))
        return GRPOConfig(policy="hf:/m", rollout=RolloutSettings(engine="vllm"), model=lora)

    with pytest.raises(ConfigError, match="up to 512, got r = 1024"):
        config(1024)
    assert config(48).model.lora.r == 48  # served under max_lora_rank 64
    assert engine_module.lora_capacity(48) == 64
