"""``EnvConfig``: the settings of one env, checked once at construction.

``gym.make`` keyword arguments map onto its fields; the episode's desktop start-up
(:mod:`~osworld_mcp_env.env.episode`), its tool running (:mod:`~osworld_mcp_env.env.tools`)
and the Gymnasium class all read this one object.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from osworld_mcp_env.actions import ActionLimits
from osworld_mcp_env.network import NetworkConfig, NetworkMode

# The CPU weight of a desktop while it is prepared (cgroups' default is 100): under
# contention the episode the agent acts in gets ~10x its share; idle CPU is still used.
PREPARING_CPU_WEIGHT = 10


@dataclass(frozen=True)
class EnvConfig:
    """Settings of one env; ``gym.make`` keyword arguments map onto these fields.

    Attributes:
        backend: Desktop backend name (``local``: the embedded sandboxed desktop).
        task: Default task (id, path or OSWorld dict) when ``reset`` gets none.
        max_steps: Steps before ``truncated`` (OSWorld's default budget: 50); the
            evaluator scores a truncated episode. ``gym.make``'s
            ``max_episode_steps`` lowers it (``step_limit.TimeLimitAsMaxSteps``).
        screen_width: Screen width in pixels.
        screen_height: Screen height in pixels.
        a11y_tree: Add the AT-SPI tree to every observation (costs 0.3–1 s a step).
        enable_mcp: Serve the MCP tool namespaces in the desktop and accept
            ``{"name": "<namespace>.<tool>", ...}`` calls.
        ax_tools: Offer the semantic channel's ``ax`` tools (``ax.observe``, ``ax.find``,
            ``ax.act``: accessibility views with refs and guarded batches) with every app's
            tools. Off by default, so the OSWorld-MCP study's tool lists stay as published;
            needs ``enable_mcp``.
        enable_bash: Accept ``{"name": "bash", ...}`` calls (run as the desktop user).
        bash_output_chars: Output of a bash call beyond this is cut, with a marker.
        stale_guard: Refuse a GUI action that cites a frame (``frame_id``) when a point it
            cites no longer lands in the same window with the same geometry
            (``guest.layout``: menus and popups count). On by default: an action that
            cites no frame is never refused, and the sample costs ~1 ms per observation.
        cache_dirs: Local directories that stand in for the internet for ``download`` steps.
        max_sleep_s: Cap of one ``sleep`` step of a task.
        step_timeout_s: Deadline of one whole ``step`` (action, settle wait,
            observation and, at the episode's end, evaluation): every desktop
            request of the step is bounded by what is left of it, and a step that
            hits it returns a ``timeout`` error value.
        record_timings: Put wall-clock timings into ``info["timings"]`` and
            ``info["tool_call"]["latency_ms"]``. They are the one part of ``info``
            that differs between two runs of the same seed and actions; turn them
            off where ``info`` must be deterministic (``check_env``).
        limits: Size bounds of one action; the action space declares the same bounds.
        backend_options: Extra keyword arguments of the backend.
        prepare_resets: Allow prepared resets (:meth:`OSWorldMCPEnv.prepare_reset`, the
            ``prepare_next`` reset option): the next episode's desktop is made and set up
            in the background on a second, fresh sandbox, and a reset to that task swaps
            to it. Costs a second desktop's memory and CPU while it is prepared; at most
            one per env. Off: both are ignored.
        preparing_cpu_weight: The CPU weight of a desktop while it is prepared, against
            the episode's (100, cgroups' default; 1-10000): the agent's desktop comes first
            under contention. Where the backend has no CPU cgroup it is ignored.
        network: ``"loopback"`` (default: the desktop reaches nothing outside itself),
            ``"internet"`` (outbound TCP through a host proxy that refuses the host's
            and private addresses), or a mapping of
            :class:`~osworld_mcp_env.network.NetworkConfig` fields (``allow``, ``hosts``,
            ``proxy_url`` for OSWorld's ``proxy: true`` tasks). Local backend only.
    """

    backend: str = "local"
    task: Any = None
    max_steps: int = 50
    screen_width: int = 1920
    screen_height: int = 1080
    a11y_tree: bool = False
    enable_mcp: bool = True
    ax_tools: bool = False
    enable_bash: bool = False
    bash_output_chars: int = 10_000
    stale_guard: bool = True
    cache_dirs: tuple[str, ...] = ()
    max_sleep_s: float = 5.0
    step_timeout_s: float = 60.0
    record_timings: bool = True
    limits: ActionLimits = field(default_factory=ActionLimits)
    backend_options: dict[str, Any] = field(default_factory=dict)
    prepare_resets: bool = False
    preparing_cpu_weight: int = PREPARING_CPU_WEIGHT
    network: NetworkConfig | str | dict[str, Any] = NetworkMode.LOOPBACK

    def __post_init__(self) -> None:
        object.__setattr__(self, "network", NetworkConfig.parse(self.network))
        if not 1 <= self.preparing_cpu_weight <= 10000:
            raise ValueError(f"preparing_cpu_weight must be in 1..10000, got {self.preparing_cpu_weight}.")
        if self.ax_tools and not self.enable_mcp:
            raise ValueError("ax_tools=True needs enable_mcp=True: the MCP tool host serves the ax tools.")
        if self.max_steps < 1:
            raise ValueError(f"max_steps must be >= 1, got {self.max_steps}.")
        if not self.step_timeout_s > 0:
            raise ValueError(f"step_timeout_s must be > 0 seconds, got {self.step_timeout_s}.")
        if self.screen_width < 64 or self.screen_height < 64:
            raise ValueError(
                f"The screen must be at least 64x64, got {self.screen_width}x{self.screen_height}."
            )
        object.__setattr__(self, "cache_dirs", tuple(str(p) for p in self.cache_dirs))


__all__ = ["PREPARING_CPU_WEIGHT", "EnvConfig"]
