"""Env factories for VMs spread over several libvirt hosts, one URI per host.

A vector env takes one factory per member; :func:`libvirt_env_fns` gives ``per_host``
factories for each URI, each building the env on the ``libvirt`` backend with its own
``LibvirtDesktopConfig.uri``, so one group's VMs run on several machines. The
factories are :func:`functools.partial` objects of ``gym.make``: they pickle, so
``AsyncVectorEnv`` and Ray actors (``grpo_trainer.rollouts.vector_ray``) can build them too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

import gymnasium as gym

from osworld_mcp_env import ENV_ID

# The module prefix makes gym.make import (and so register) the env in the process that builds it.
MAKE_ID = f"osworld_mcp_env:{ENV_ID}"


def libvirt_env_fns(
    uris: Sequence[str],
    per_host: int = 1,
    *,
    backend_options: Mapping[str, Any] | None = None,
    env_id: str = MAKE_ID,
    **env_kwargs: Any,
) -> list[Callable[[], gym.Env]]:
    """``per_host`` libvirt env factories per URI, hosts interleaved (member i on ``uris[i % len(uris)]``).

    Interleaving keeps a group of any size spread evenly: its first ``len(uris)``
    members are on different hosts.

    Args:
        uris: libvirt connection URIs, one per host (``qemu:///system``,
            ``qemu+ssh://host/system``); a URI given twice gets twice the VMs.
        per_host: VMs on each URI.
        backend_options: The other ``LibvirtDesktopConfig`` fields, the same for every VM
            (``image_dir``, ``memory_mb``, ``work_dir``); a ``uri`` here is refused.
        env_id: The registered env to make.
        env_kwargs: Other ``gym.make`` keyword arguments (``enable_mcp``, ``max_steps``).

    Raises:
        ValueError: No URI, ``per_host < 1``, or a ``uri`` in ``backend_options``.
    """
    options = dict(backend_options or {})
    if not uris or per_host < 1:
        raise ValueError(f"Need at least one URI and per_host >= 1, got {list(uris)} and {per_host}.")
    if "uri" in options:
        raise ValueError("Pass the URIs as `uris`, not as backend_options['uri'].")
    return [
        partial(gym.make, env_id, backend="libvirt", backend_options={**options, "uri": uri}, **env_kwargs)
        for _ in range(per_host)
        for uri in uris
    ]
