"""The run configuration: one dataclass per component, Table 6 defaults, TOML/YAML in and out.

A config file has one table per section (``[agent]``, ``[model]``, ``[rollout]``, ``[reward]``,
``[advantage]``, ``[optim]``, ``[loss]``, ``[engine]``, ``[checkpoint]``, ``[probe]``, ``[curation]``,
``[sft]`` for ``grpo-train sft``) plus
top-level ``policy``, ``env_id``, ``tasks``;
unknown keys raise with the closest known name.
"""

from __future__ import annotations

import dataclasses
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hybrid_agent.agent_loop import AgentConfig

from grpo_trainer.errors import ConfigError, unknown_name_message
from grpo_trainer.model.packing import PACKINGS
from grpo_trainer.objectives.advantage import AdvantageConfig
from grpo_trainer.objectives.curation import CurationConfig
from grpo_trainer.objectives.rewards import RewardConfig
from grpo_trainer.sft.settings import SFTSettings
from grpo_trainer.training.probes import ProbeSettings

# The decoder's linear layers in Qwen3-VL (and Qwen2/2.5-VL): attention and MLP projections of the language
# model. The vision tower names its layers qkv/proj/linear_fc*, so it stays frozen.
QWEN_LINEAR_LAYERS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
# The ``max_lora_rank`` values vLLM accepts (``MaxLoRARanks``, vllm/config/lora.py, 0.11 to 0.33).
VLLM_LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)


def lora_capacity(rank: int) -> int:
    """The smallest ``max_lora_rank`` vLLM accepts that holds an adapter of ``rank``."""
    fits = [r for r in VLLM_LORA_RANKS if r >= rank]
    if not fits:
        raise ConfigError(
            f"[rollout] engine = 'vllm' serves LoRA ranks up to {VLLM_LORA_RANKS[-1]}, got r = {rank}."
        )
    return fits[0]


@dataclass(frozen=True)
class LoraSettings:
    """LoRA adapters (PEFT) on the policy's linear layers; the base weights stay frozen.

    ``alpha / r`` scales the adapter's update (PEFT's ``lora_alpha``). ``dropout`` is 0 by
    default: the policy samples and scores in train mode, so adapter dropout would make the
    rollout-time and the recomputed log-probs of one sample differ (importance ratios away
    from 1 before any update). ``target_modules`` are module-name suffixes, PEFT's matching.
    """

    r: int = 16
    alpha: int = 32
    dropout: float = 0.0
    target_modules: tuple[str, ...] = QWEN_LINEAR_LAYERS

    def __post_init__(self) -> None:
        if self.r < 1 or self.alpha <= 0 or not 0.0 <= self.dropout < 1.0 or not self.target_modules:
            raise ConfigError(
                f"lora needs r >= 1, alpha > 0, 0 <= dropout < 1 and target_modules, got r={self.r}, "
                f"alpha={self.alpha}, dropout={self.dropout}, target_modules={list(self.target_modules)}."
            )


@dataclass(frozen=True)
class ModelSettings:
    """What is trained of the policy's model, and how its activations are kept (``hf:`` policies).

    ``lora`` unset (the default) is full fine-tuning; a table (``lora = {r = 16}``, missing keys
    at :class:`LoraSettings`' defaults) trains LoRA adapters only. The KL term needs no frozen
    reference copy either way: its anchor is the rollout-time log-probs stored with each sample.
    ``gradient_checkpointing`` recomputes each decoder layer's activations in the backward pass
    instead of keeping them; unset it is on for ``hf:PATH`` checkpoints and off for in-code models.
    """

    lora: LoraSettings | None = field(
        default=None, metadata={"example": LoraSettings(), "unset": "full fine-tuning"}
    )
    gradient_checkpointing: bool | None = field(
        default=None, metadata={"example": True, "unset": "on for hf:PATH, off for in-code models"}
    )

    def __post_init__(self) -> None:
        if isinstance(self.lora, dict):  # a config file's table
            object.__setattr__(self, "lora", _section(LoraSettings, "model.lora", self.lora))

    def checkpointing(self, policy: str) -> bool:
        """Whether gradient checkpointing is on for the run's ``policy`` spec."""
        if self.gradient_checkpointing is None:
            return policy.startswith("hf:")
        return self.gradient_checkpointing


@dataclass(frozen=True)
class CheckpointSettings:
    """Which checkpoints stay on disk.

    ``keep_last = N`` keeps the N newest complete checkpoints and removes older ones once a new
    one is complete (``latest`` moved to it); 0 keeps all. The default 3 bounds the disk: a
    ZeRO-3 checkpoint of an 8B model with its AdamW state is about 100 GB.
    """

    keep_last: int = 3

    def __post_init__(self) -> None:
        if self.keep_last < 0:
            raise ConfigError(f"keep_last must be >= 0 (0: keep every checkpoint), got {self.keep_last}.")


@dataclass(frozen=True)
class RolloutSettings:
    """Rollout settings: G, sampling, tasks per step, where the group's envs run.

    What the model is shown (context policy, BM25 top-k, coordinates) is the ``[agent]``
    section, evaluation's :class:`~hybrid_agent.agent_loop.AgentConfig`.

    ``executor`` names a kind of :func:`grpo_trainer.rollouts.vector.make_group_env`: ``sync`` (this
    process), ``async`` (a subprocess per env) or ``ray`` (a Ray actor per env, any node).

    ``max_new_tokens`` and ``max_prompt_tokens`` are the study's budgets of an ``hf:`` policy's
    model call: a longer reply is cut off (it executes nothing); a longer prompt is not
    sampled at all and its step, recorded with an empty response, trains nothing.

    ``engine`` names the rollout engine (:mod:`grpo_trainer.model.engines`): ``hf`` samples with the
    trained model's own ``generate`` in this process; ``vllm`` samples with a colocated vLLM
    engine (GPU, the ``vllm`` package) that sleeps during updates and gets the weights after
    each; ``engine_options`` are its keyword arguments (``gpu_memory_utilization`` ...).

    ``desktops`` > 0 rolls out continuously (:mod:`grpo_trainer.rollouts.continuous`) over that many
    desktops, any number, fewer or more than G: each starts the step's next episode as soon as
    its last one ended, model calls batched across them. Each desktop's episode loop is a
    thread of this process; ``executor = "sync"`` builds its env here, ``"ray"`` in a Ray actor
    (any node; a dead actor's episode is a crash and its next job runs on a new actor);
    ``"async"`` is refused. 0 (the default) keeps the group env: G envs in lockstep, one group
    at a time, bitwise reproducible.

    ``prepared_resets``: each desktop env sets up its next episode on a second desktop while
    the current one runs, so the reset after it swaps that in (~19 ms, against ~2.7 s cold);
    the cold path stays every reset's fallback. ``"auto"`` (the default) turns them on where
    the host has the memory for a second desktop per env
    (:func:`osworld_mcp_env.env.prepared_reset.prepared_resets_fit`, as the eval runner does),
    ``true`` / ``false`` force it. Only desktop envs (``OSWorldMCP-v0``) prepare; others ignore
    ``"auto"`` and ``false`` (``true`` is refused). ``env_kwargs.prepare_resets`` set by hand
    also wins over ``"auto"``. The group env names each group's next task; continuous rollouts
    name a desktop's next job when its current episode starts (:mod:`grpo_trainer.rollouts.continuous`).
    """

    group_size: int = 8
    temperature: float = 1.0
    tasks_per_step: int = 4
    executor: str = "sync"
    max_new_tokens: int = 8192
    max_prompt_tokens: int = 16384
    engine: str = "hf"
    engine_options: dict[str, Any] = field(default_factory=dict)
    desktops: int = 0
    prepared_resets: bool | str = "auto"

    def __post_init__(self) -> None:
        if not (isinstance(self.prepared_resets, bool) or self.prepared_resets == "auto"):
            raise ConfigError(f"prepared_resets must be true, false or 'auto', got {self.prepared_resets!r}.")
        if self.group_size < 2 or self.tasks_per_step < 1:
            raise ConfigError(f"group_size must be >= 2 and tasks_per_step >= 1, got {self.group_size}.")
        if self.desktops < 0:
            raise ConfigError(f"desktops must be >= 0 (0: the group env), got {self.desktops}.")
        if self.desktops and self.executor == "async":
            raise ConfigError(
                f"desktops = {self.desktops} drives each desktop from a thread of this process, so a "
                "subprocess per desktop ('async') adds no concurrency, and a dead subprocess would stop "
                "the whole collect; use executor 'sync' (desktops here) or 'ray' (one actor each, "
                "a dead one is a crash episode)."
            )
        if self.max_new_tokens < 1 or self.max_prompt_tokens < 1:
            raise ConfigError(
                f"max_new_tokens and max_prompt_tokens must be >= 1, got {self.max_new_tokens} and "
                f"{self.max_prompt_tokens}."
            )


@dataclass(frozen=True)
class OptimSettings:
    """AdamW with a cosine schedule (no warm-up), grad-norm clipping, several updates per batch.

    ``updates_per_batch`` is read as full passes: each pass is ``minibatches`` optimizer updates,
    and with the default ``minibatches = 1`` every update takes the gradient of the whole
    rollout batch (the study's "4 updates per step" = 4 passes of one update each).
    ``minibatches = N`` is the other reading, PPO's: each pass splits the batch (in sample
    order) into N near-equal mini-batches, one optimizer update each, so every sample is seen
    once per pass and a step makes ``updates_per_batch * N`` updates (what the LR schedule
    and ``[engine] max_staleness`` count).

    ``micro_batch_tokens = N`` sizes the micro-batches of an update by tokens instead of
    ``[engine] micro_batch_size`` samples: samples sorted by length share a micro-batch while
    its padded size (rows x longest prompt + response) stays within N
    (:func:`grpo_trainer.model.packing.token_micro_batches`); 0 leaves it to ``micro_batch_size``.

    ``packing`` lays out a micro-batch of an ``hf:`` policy: ``padded`` (the default) as
    left-padded rows; ``padding_free`` as one row of its samples back to back, no pad token,
    position ids restarting at each sample (the model's own multimodal rope positions) and
    attention that stops at sample boundaries (:func:`grpo_trainer.model.inputs.collate_packed`);
    ``micro_batch_tokens`` then budgets the sum of the lengths. Both score the same log-probs.
    It pays on GPU with a model whose attention is ``flash_attention_2`` (varlen kernels from
    the position ids, no mask); under SDPA or eager (CPU, and the default load) ``transformers``
    builds a block-diagonal ``T x T`` mask for the row, which is why padded stays the default.

    ``cache_inputs`` keeps each sample's processed inputs (pixels in the model's dtype) on the
    host from the step's first scoring to its last update (:mod:`grpo_trainer.model.inputs`),
    so the image processor runs once per sample per step; a window of four 1080p screenshots
    holds 100-200 MB. ``false`` re-runs the processor at every scoring instead.
    """

    lr: float = 5e-6
    schedule: str = "cosine"
    warmup_steps: int = 0
    weight_decay: float = 0.0
    betas: tuple[float, float] = (0.9, 0.999)
    grad_clip: float = 1.0
    updates_per_batch: int = 4
    minibatches: int = 1
    clip_eps: float = 0.2
    kl_beta: float = 0.02
    total_steps: int = 100
    micro_batch_tokens: int = 0
    packing: str = "padded"
    cache_inputs: bool = True

    def __post_init__(self) -> None:
        if self.packing not in PACKINGS:
            raise ConfigError(f"packing must be one of {PACKINGS}, got {self.packing!r}.")
        if self.micro_batch_tokens < 0:
            raise ConfigError(f"micro_batch_tokens must be >= 0 (0: off), got {self.micro_batch_tokens}.")
        if self.schedule not in ("cosine", "constant"):
            raise ConfigError(f"schedule must be 'cosine' or 'constant', got {self.schedule!r}.")
        if self.lr <= 0 or self.updates_per_batch < 1 or self.minibatches < 1 or self.total_steps < 1:
            raise ConfigError("lr must be > 0, updates_per_batch, minibatches and total_steps >= 1.")

    @property
    def updates_per_step(self) -> int:
        """Optimizer updates one training step makes: passes times mini-batches."""
        return self.updates_per_batch * self.minibatches


@dataclass(frozen=True)
class LossSettings:
    """Corrections of the policy loss.

    ``tis_cap`` turns on truncated importance sampling for rollouts sampled by another
    engine (TRL's ``vllm_importance_sampling_cap``, verl's TIS): before the batch's first
    update the trainer scores the sampled tokens itself, uses those log-probs as the old
    policy (ratio and KL anchor), and weights each token's surrogate by
    ``min(exp(logp_train_old - logp_engine), tis_cap)``. Unset: no weighting, the engine's
    log-probs are the old policy. The gap between the two is logged either way when the
    engine is not ``hf`` (``offpolicy/*``).
    """

    tis_cap: float | None = field(default=None, metadata={"example": 2.0, "unset": "no correction"})

    def __post_init__(self) -> None:
        if self.tis_cap is not None and self.tis_cap <= 0:
            raise ConfigError(f"tis_cap must be > 0 (TRL's default is 2.0), got {self.tis_cap}.")


@dataclass(frozen=True)
class EngineSettings:
    """Backend, precision, seed, checkpoints, sync or async rollouts.

    ``mode = "async"`` rolls out the next steps on a thread while the learner updates
    (:mod:`grpo_trainer.rollouts.async_worker`): up to ``queue_size`` finished steps wait, and a
    group whose oldest sample is more than ``max_staleness`` optimizer updates behind the
    weights being updated is dropped and counted. The default 2 is the GUI+CLI study's
    (HybridCUA's) bound, which counts optimizer updates. A group rolled out while the
    previous step trained is ``optim.updates_per_step`` updates behind (4 with the
    defaults), so keeping such groups needs ``max_staleness >= updates_per_step``.
    """

    backend: str = "deepspeed"
    zero_stage: int = 3
    precision: str = "bf16"
    seed: int = 10086
    output_dir: str = "runs/grpo"
    save_every: int = 1
    mode: str = "sync"
    max_staleness: int = 2
    queue_size: int = 1
    micro_batch_size: int = 0  # samples per forward/backward within an update; 0: the whole batch
    replay_check: bool = False  # rebuild every trained sample's context and compare with the stored ids

    def __post_init__(self) -> None:
        if self.backend not in ("torch", "deepspeed"):
            raise ConfigError(f"backend must be 'torch' or 'deepspeed', got {self.backend!r}.")
        if self.precision not in ("bf16", "fp32"):
            raise ConfigError(f"precision must be 'bf16' or 'fp32', got {self.precision!r}.")
        if self.mode not in ("sync", "async"):
            raise ConfigError(f"mode must be 'sync' or 'async', got {self.mode!r}.")
        if self.max_staleness < 0 or self.queue_size < 1:
            raise ConfigError(
                f"max_staleness must be >= 0 and queue_size >= 1, got {self.max_staleness} and "
                f"{self.queue_size}."
            )
        if self.micro_batch_size < 0:
            raise ConfigError(f"micro_batch_size must be >= 0 (0: whole batch), got {self.micro_batch_size}.")


_SECTIONS = {
    "agent": AgentConfig,
    "model": ModelSettings,
    "rollout": RolloutSettings,
    "reward": RewardConfig,
    "advantage": AdvantageConfig,
    "optim": OptimSettings,
    "loss": LossSettings,
    "engine": EngineSettings,
    "checkpoint": CheckpointSettings,
    "probe": ProbeSettings,
    "curation": CurationConfig,
    "sft": SFTSettings,
}


@dataclass(frozen=True)
class GRPOConfig:
    """A whole run.

    Attributes:
        policy: ``tiny`` (the in-code test policy) or ``hf:PATH`` (a local Qwen3-VL checkpoint).
        env_id: The Gymnasium id rollouts run on.
        env_kwargs: Extra ``gym.make`` keyword arguments.
        tasks: Task ids or configs, cycled in order.
        agent: What the model is shown and how its reply is read (``hybrid-agent eval``'s flags;
            ``adapter`` names the model family: prompt, reply format, coordinates, screenshots).
    """

    policy: str = "tiny"
    env_id: str = "grpo_trainer:ToolOrGui-v0"
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    tasks: tuple[str, ...] = ("toy",)
    agent: AgentConfig = field(default_factory=AgentConfig)
    model: ModelSettings = field(default_factory=ModelSettings)
    rollout: RolloutSettings = field(default_factory=RolloutSettings)
    reward: RewardConfig = field(default_factory=RewardConfig)
    advantage: AdvantageConfig = field(default_factory=AdvantageConfig)
    optim: OptimSettings = field(default_factory=OptimSettings)
    loss: LossSettings = field(default_factory=LossSettings)
    engine: EngineSettings = field(default_factory=EngineSettings)
    checkpoint: CheckpointSettings = field(default_factory=CheckpointSettings)
    probe: ProbeSettings = field(default_factory=ProbeSettings)
    curation: CurationConfig = field(default_factory=CurationConfig)
    sft: SFTSettings = field(default_factory=SFTSettings)

    def __post_init__(self) -> None:
        if "prepare_resets" in self.env_kwargs and self.rollout.prepared_resets != "auto":
            raise ConfigError(
                f"Set one of [rollout] prepared_resets ({self.rollout.prepared_resets!r}) and "
                f"env_kwargs.prepare_resets ({self.env_kwargs['prepare_resets']!r}), not both."
            )
        if self.agent.parse_retries:
            raise ConfigError(
                "[agent] parse_retries must be 0 for training: every reply is a sample the update sees, "
                "and a re-sample would hide the malformed one from it; got "
                f"{self.agent.parse_retries}."
            )
        if self.rollout.engine == "vllm" and self.engine.mode == "async":
            raise ConfigError(
                "[rollout] engine = 'vllm' is colocated: it sleeps while the trainer updates, so it "
                "runs with [engine] mode = 'sync'; use engine = 'hf' for async mode."
            )
        if self.rollout.engine == "vllm" and self.model.lora is not None:
            lora_capacity(self.model.lora.r)  # refused here, not when the engine starts on the GPU
        if self.optim.micro_batch_tokens and self.engine.micro_batch_size:
            raise ConfigError(
                "Set one of [optim] micro_batch_tokens and [engine] micro_batch_size, got "
                f"{self.optim.micro_batch_tokens} and {self.engine.micro_batch_size}."
            )

    def to_dict(self) -> dict[str, Any]:
        """A plain nested dict (tuples as lists), the shape a config file has."""
        return _plain(dataclasses.asdict(self))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GRPOConfig:
        """Builds a config from a nested dict; unknown keys raise with a suggestion."""
        top = {f.name for f in dataclasses.fields(cls)}
        kwargs: dict[str, Any] = {}
        for key, value in data.items():
            if key not in top:
                raise ConfigError(unknown_name_message("config key", key, top))
            if key in _SECTIONS:
                kwargs[key] = _section(_SECTIONS[key], key, value)
            elif key == "tasks":
                kwargs[key] = tuple(value)
            else:
                kwargs[key] = value
        return cls(**kwargs)


def _section(kind: type, name: str, values: dict[str, Any]) -> Any:
    fields = {f.name: f for f in dataclasses.fields(kind)}
    for key in values:
        if key not in fields:
            raise ConfigError(unknown_name_message(f"key of [{name}]", key, fields))
    return kind(**{k: tuple(v) if isinstance(v, list) else v for k, v in values.items()})


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def load_config(path: str | Path) -> GRPOConfig:
    """Reads a ``.toml``, ``.yaml`` or ``.yml`` file."""
    path = Path(path)
    text = path.read_text()
    if path.suffix == ".toml":
        data = tomllib.loads(text)
    elif path.suffix in (".yaml", ".yml"):
        import yaml

        data = yaml.safe_load(text) or {}
    else:
        raise ConfigError(f"Config {path} must end in .toml, .yaml or .yml.")
    return GRPOConfig.from_dict(data)


def to_toml(config: GRPOConfig) -> str:
    """The config as TOML (what ``grpo-train --print-defaults`` prints)."""
    data = config.to_dict()
    lines = []
    for key, value in data.items():
        if not isinstance(value, dict) or key == "env_kwargs":
            lines.append(f"{key} = {_toml_value(value)}")
    for key, value in data.items():
        if isinstance(value, dict) and key != "env_kwargs":
            lines.append(f"\n[{key}]")
            fields = {f.name: f.metadata for f in dataclasses.fields(getattr(config, key))}
            for k, v in value.items():
                # TOML has no null: a key left unset (None) is left out, which reads back as its default;
                # a field with an example shows it as a comment, with what unset means.
                if v is not None:
                    lines.append(f"{k} = {_toml_value(v)}")
                elif "example" in fields[k]:
                    example = _plain(_asdict(fields[k]["example"]))
                    lines.append(f"# {k} = {_toml_value(example)}  # unset: {fields[k]['unset']}")
    return "\n".join(lines) + "\n"


def _asdict(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return value


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items()) + "}"
    return repr(value)
