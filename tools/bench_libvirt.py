"""Benchmark of the libvirt backend against the local one, in one run on one machine.

Prints one table, libvirt then local, with their ratio: the image build (cold: the
time the cached image's own build recorded, or measured with ``--cold`` in a
scratch cache; cached: ``tools/build-image`` with unchanged inputs), boot to the
guest answering, boot plus the warm-up and snapshot, a reset by snapshot revert and
by a new overlay (each until the guest answers), ``reset`` to the calc task's first
observation, ``env.step`` for a no-op GUI action and for a click on a Calc cell, and
host memory per desktop (QEMU's RSS; the sandbox's processes for the local one).
Issue 11's targets under TCG: reset by snapshot <= 5 s, step <= 3x the local one.

    uv run python tools/bench_env.py --backend libvirt [--steps 20] [--resets 5] [--cold]

Needs what ``tests/osworld_mcp_env/backends/libvirt/test_libvirt_backend.py`` needs (root, libvirtd,
the image); libvirtd is started by ``tools/image/start-libvirtd`` where none runs.
Each VM is booted three times (the env's, and twice for the overlay reset): several
minutes under TCG.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import gymnasium as gym
from bench_common import (  # tools/ is on sys.path when this file runs as a script
    CLICKS,
    ENV_ID,
    NOOP,
    load_average,
    median_ms,
    p95_ms,
    print_table,
    process_memory,
    timed_step,
)
from osworld_mcp_env.backends import make_desktop
from osworld_mcp_env.backends.libvirt.desktop import LibvirtDesktop
from osworld_mcp_env.backends.local.desktop import LocalDesktop
from osworld_mcp_env.env.core import OSWorldMCPEnv

REPO = Path(__file__).resolve().parent.parent
BUILD_IMAGE = REPO / "tools" / "build-image"
URI = "qemu:///system"
TASK = "calc-sum-column"


def build_times(cold: bool) -> tuple[Path, float, str, float]:
    """(image directory, cold build seconds, where that figure comes from, cached build seconds).

    A first call that had to build is the cold figure; otherwise the one the image's
    build recorded, or (``cold``) a build in a scratch cache measured now.
    """
    first_s, image = _timed_build([])
    cached_s, _image = _timed_build([])
    if first_s > 10 * cached_s + 60:
        return image, first_s, "measured now", cached_s
    if not cold:
        return (
            image,
            float(json.loads((image / "image.json").read_text())["build_s"]),
            "recorded by its build",
            cached_s,
        )
    with tempfile.TemporaryDirectory(prefix="bench-image-", dir="/var/tmp") as scratch:
        return image, _timed_build(["--cache-dir", scratch])[0], "measured now", cached_s


def _timed_build(extra: list[str]) -> tuple[float, Path]:
    started = time.perf_counter()
    image = _build(extra)
    return time.perf_counter() - started, image


def _build(extra: list[str]) -> Path:
    done = subprocess.run(
        [sys.executable, str(BUILD_IMAGE), *extra], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"tools/build-image failed: {done.stderr[-3000:]}")
    return Path(done.stdout.split()[-1])


def qemu_rss(name: str) -> int:
    """Resident bytes of the QEMU process of domain ``name``."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        if b"qemu-system" in cmdline and f"guest={name}".encode() in cmdline:
            return process_memory([int(entry)])[0]
    raise RuntimeError(f"No QEMU process for domain {name}.")


def timed(action: Callable[[], Any], times: int) -> list[float]:
    """Wall seconds of ``times`` calls."""
    samples = []
    for _ in range(times):
        started = time.perf_counter()
        action()
        samples.append(time.perf_counter() - started)
    return samples


def bench_env_side(backend: str, steps: int, resets: int, options: dict[str, Any]) -> dict[str, float]:
    """Boot, resets, steps and memory of one env on ``backend`` with the calc task."""
    started = time.perf_counter()
    env = gym.make(
        ENV_ID, task=TASK, backend=backend, enable_mcp=False, max_steps=1_000_000, backend_options=options
    )
    try:
        env.reset()
        first_reset_s = time.perf_counter() - started
        desktop = cast(OSWorldMCPEnv, env.unwrapped).desktop
        restart_s = timed(desktop.restart, resets)
        env_reset_s = timed(env.reset, resets)
        noop_s = [timed_step(env, NOOP)[0] for _ in range(steps)]
        click_s = [timed_step(env, CLICKS[i % 2])[0] for i in range(steps)]
        result = {
            "first_reset_s": first_reset_s,
            "restart_ms": median_ms(restart_s),
            "restart_p95_ms": p95_ms(restart_s),
            "env_reset_ms": median_ms(env_reset_s),
            "noop_ms": median_ms(noop_s),
            "noop_p95_ms": p95_ms(noop_s),
            "click_ms": median_ms(click_s),
            "click_p95_ms": p95_ms(click_s),
        }
        if isinstance(desktop, LibvirtDesktop):
            result["boot_s"] = desktop.boot_s
            result["rss_mb"] = qemu_rss(desktop.name) / 2**20
        else:
            result["rss_mb"] = process_memory(cast(LocalDesktop, desktop).processes())[0] / 2**20
        return result
    finally:
        env.close()


def bench_overlay_reset(image: Path, resets: int) -> tuple[float, list[float]]:
    """(boot seconds, reset seconds) of a VM under ``reset_mode="overlay"``."""
    desktop = cast(
        LibvirtDesktop,
        make_desktop(
            "libvirt",
            screen_width=1920,
            screen_height=1080,
            image_dir=image,
            uri=URI,
            reset_mode="overlay",
            warm_commands=(),
        ),
    )
    try:
        return desktop.boot_s, timed(desktop.restart, resets)
    finally:
        desktop.close()


def run(steps: int, resets: int, *, overlay_resets: int, cold: bool) -> None:
    """Measures both backends and prints the table."""
    wall = time.perf_counter()
    print(f"# bench_env --backend libvirt: load average at the start {load_average()}", flush=True)
    subprocess.run(["bash", str(REPO / "tools" / "image" / "start-libvirtd")], check=True)
    image, cold_s, cold_source, cached_s = build_times(cold)
    vm = bench_env_side("libvirt", steps, resets, {"image_dir": image, "uri": URI})
    overlay_boot_s, overlay_s = bench_overlay_reset(image, overlay_resets)
    local = bench_env_side("local", steps, resets, {})

    def ratio(key: str) -> str:
        return f"{vm[key] / local[key]:.1f}x"

    rows = [
        ("image build, cold", f"{cold_s:.0f} s", "", "", cold_source),
        ("image build, cached (hashing the inputs)", f"{cached_s:.1f} s", "", "", ""),
        ("boot to guest answering", f"{vm['boot_s']:.0f} s", "", "", f"overlay VM: {overlay_boot_s:.0f} s"),
        (
            "boot + warm-up + snapshot + calc task setup (first reset)",
            f"{vm['first_reset_s']:.0f} s",
            f"{local['first_reset_s']:.1f} s",
            ratio("first_reset_s"),
            "local: sandbox start (+ LibreOffice profile once per host)",
        ),
        (
            "reset by snapshot, until the guest answers (median)",
            f"{vm['restart_ms'] / 1000:.2f} s",
            f"{local['restart_ms'] / 1000:.2f} s",
            ratio("restart_ms"),
            f"p95 {vm['restart_p95_ms'] / 1000:.2f} s; local: the guest's session reset; target <= 5 s",
        ),
        (
            "reset by a new overlay, until the guest answers",
            f"{statistics.median(overlay_s):.0f} s",
            "",
            "",
            f"{len(overlay_s)} reset(s): a full boot without warm-up",
        ),
        (
            "reset to the calc task's first observation (median)",
            f"{vm['env_reset_ms'] / 1000:.1f} s",
            f"{local['env_reset_ms'] / 1000:.2f} s",
            ratio("env_reset_ms"),
            "snapshot revert + task setup (opens the file in Calc)",
        ),
        (
            "env.step no-op GUI (median)",
            f"{vm['noop_ms']:.0f} ms",
            f"{local['noop_ms']:.0f} ms",
            ratio("noop_ms"),
            f"p95 {vm['noop_p95_ms']:.0f} / {local['noop_p95_ms']:.0f} ms; target <= 3x",
        ),
        (
            "env.step click a Calc cell (median)",
            f"{vm['click_ms']:.0f} ms",
            f"{local['click_ms']:.0f} ms",
            ratio("click_ms"),
            f"p95 {vm['click_p95_ms']:.0f} / {local['click_p95_ms']:.0f} ms; target <= 3x",
        ),
        (
            "host memory per desktop, Calc open (RSS)",
            f"{vm['rss_mb']:.0f} MB",
            f"{local['rss_mb']:.0f} MB",
            ratio("rss_mb"),
            "QEMU process (2 GiB guest) / the sandbox's processes",
        ),
    ]
    print(f"# {os.cpu_count()} CPUs, {steps} steps and {resets} resets per side, image {image.name}")
    print_table(["measure", "libvirt", "local", "libvirt / local", "note"], rows, text_columns=(0, 4))
    print(f"wall {time.perf_counter() - wall:.0f} s, load average at the end {load_average()}")


def main(argv: list[str] | None = None) -> int:
    """CLI entry point; ``tools/bench_env.py --backend libvirt`` calls :func:`run` the same way."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--resets", type=int, default=5)
    parser.add_argument("--overlay-resets", type=int, default=1, help="each is a full boot")
    parser.add_argument("--cold", action="store_true", help="measure a cold image build (minutes)")
    args = parser.parse_args(argv)
    run(args.steps, args.resets, overlay_resets=args.overlay_resets, cold=args.cold)
    return 0


if __name__ == "__main__":
    sys.exit(main())
