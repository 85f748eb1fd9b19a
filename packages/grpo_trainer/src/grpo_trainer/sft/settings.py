"""The ``[sft]`` section: which recorded runs become data, the SFT context rule, the schedule.

Defaults are HybridCUA's supervised stage (``../shared/notes/hybridcua-pipeline.md``): one
sample per decision of each successful trajectory, the current screenshot whole (2,040
visual tokens for Qwen3-VL at 1920x1080), the two previous ones at half each side (510),
older ones as placeholders, at most 30 steps of turns, samples over 12,000 tokens dropped;
lr 1e-5, cosine, 10 % warm-up, 2 epochs.
"""

from __future__ import annotations

from dataclasses import dataclass

from grpo_trainer.errors import ConfigError

# The SFT context rule as a context policy name (hybrid_agent.presets): 30 past steps and the
# current one, pixels for the newest 3 frames only, the 2 before the current one downscaled by 0.5.
SFT_CONTEXT = "win31+images+downscale"


@dataclass(frozen=True)
class SFTSettings:
    """Supervised fine-tuning on recorded episodes (``grpo-train sft``).

    Attributes:
        runs: Run directories of ``hybrid-agent eval``, or OSWorld result trees of ``hybrid-agent
            export-osworld``, whose successful episodes are the data.
        context: The context policy every sample is rendered with (:data:`SFT_CONTEXT`); the
            screenshots are otherwise shown as ``[agent]``'s adapter shows them.
        max_tokens: Samples longer than this (prompt + target) are dropped and counted.
        min_score: An episode is successful, and its steps samples, when its score is at least this.
        lr: Peak learning rate.
        schedule: ``cosine`` (after the warm-up) or ``constant``.
        warmup_ratio: Share of the optimizer updates spent warming up linearly.
        epochs: Passes over the samples.
        batch_size: Samples per optimizer update (the loss is the token mean over them).
        micro_batch_size: Samples per forward/backward inside an update.
        save_every: Optimizer updates between checkpoints (the last update is always saved).
        export: Write ``<output_dir>/hf`` at the end, the checkpoint ``hf:PATH`` loads.
    """

    runs: tuple[str, ...] = ()
    context: str = SFT_CONTEXT
    max_tokens: int = 12000
    min_score: float = 1.0
    lr: float = 1e-5
    schedule: str = "cosine"
    warmup_ratio: float = 0.1
    epochs: int = 2
    batch_size: int = 256
    micro_batch_size: int = 1
    save_every: int = 100
    export: bool = True

    def __post_init__(self) -> None:
        if self.schedule not in ("cosine", "constant"):
            raise ConfigError(f"[sft] schedule must be 'cosine' or 'constant', got {self.schedule!r}.")
        if self.lr <= 0 or not 0 <= self.warmup_ratio < 1:
            raise ConfigError(
                f"[sft] needs lr > 0 and 0 <= warmup_ratio < 1, got {self.lr}, {self.warmup_ratio}."
            )
        if min(self.epochs, self.batch_size, self.micro_batch_size, self.save_every, self.max_tokens) < 1:
            raise ConfigError(
                "[sft] epochs, batch_size, micro_batch_size, save_every and max_tokens must be >= 1."
            )
