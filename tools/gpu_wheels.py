"""The wheels tools/gpu_check.sh carries to the lent GPU machine, and its CPU rehearsal's environment.

The lent machine has no network, Python 3.12 and the packages of its image
(tools/gpu_image_packages.txt), none of this workspace's dependencies beyond those. The
check's sources travel as the working tree and go on ``PYTHONPATH``; what they import that the
image lacks travels as wheels in the git-ignored ``.whl/`` folder (``carry`` it), installed
there with ``pip install --no-index --no-deps --target``.

``build``
    Downloads :data:`CARRIED` at the versions ``uv.lock`` pins, as CPython 3.12 manylinux
    x86-64 wheels, into ``.whl/`` (emptied first), and builds DeepSpeed's wheel here
    (``DS_BUILD_OPS=0``: pure Python, no op compiled; the trainer uses torch's AdamW). Refuses
    a package the image already has (two versions would shadow the image's) and a folder over
    :data:`BUDGET_MIB`.
``rehearsal-env``
    Makes (once; again when the image list changes) a Python 3.12 virtual environment holding
    :data:`REHEARSAL` from the image list at the image's versions, their dependencies, then
    removes every package the image does not list, and prints its interpreter. The rehearsal
    (``bash tools/gpu_check.sh --rehearse``) runs the check there with ``.whl/``: an import
    that would fail on the machine fails there.

    python3 tools/gpu_wheels.py build          # .venv's python: it has torch for DeepSpeed's build
    python3 tools/gpu_wheels.py rehearsal-env  # prints the interpreter
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WHEELS = ROOT / ".whl"
IMAGE_LIST = ROOT / "tools" / "gpu_image_packages.txt"
BUDGET_MIB = 24  # of the 64 MiB a call carries; the working tree is most of the rest

# What the check imports that the image lacks (its import closure, less the image): the toy and
# desktop envs' Gymnasium, the agent's BM25 retrieval, the trainer's TensorBoard writer and
# DeepSpeed with what DeepSpeed imports. The rehearsal fails if one is missing.
CARRIED = (
    "gymnasium",
    "farama-notifications",
    "rank-bm25",
    "tensorboardx",
    "hjson",
    "pydantic",
    "pydantic-core",
    "annotated-types",
    "typing-inspection",
)
SOURCE_BUILT = ("deepspeed",)  # sdist only on PyPI: a wheel built here

# Image packages the rehearsal installs (the check's imports among them; the rest of the image
# is not needed to run it). Versions from the image list where it has them.
REHEARSAL = (
    "torch",
    "transformers",
    "accelerate",
    "huggingface-hub",
    "numpy",
    "safetensors",
    "tokenizers",
    "peft",
    "pillow",
    "jinja2",
    "pyyaml",
    "psutil",
    "pytest",
    "packaging",
    "regex",
    "tqdm",
    "protobuf",
    "msgpack",
    "ninja",
    "py-cpuinfo",
    "einops",
    "nvidia-ml-py",
    "pip",
)
PLATFORMS = (
    "manylinux_2_28_x86_64",
    "manylinux_2_27_x86_64",
    "manylinux_2_17_x86_64",
    "manylinux2014_x86_64",
    "manylinux1_x86_64",
)


def normalise(name: str) -> str:
    """A distribution name as PEP 503 compares them."""
    return re.sub(r"[-_.]+", "-", name).lower()


def image_packages(path: Path = IMAGE_LIST) -> dict[str, str | None]:
    """The image's packages: normalised name -> version (``None`` where the list has none)."""
    packages: dict[str, str | None] = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            name, _, version = line.partition("==")
            packages[normalise(name)] = version or None
    return packages


def locked_versions(lock: Path = ROOT / "uv.lock") -> dict[str, str]:
    """``uv.lock``'s version of each package, by normalised name."""
    data = tomllib.loads(lock.read_text())
    return {normalise(p["name"]): p["version"] for p in data["package"] if "version" in p}


def pins(names: tuple[str, ...], versions: dict[str, str]) -> list[str]:
    """``NAME==VERSION`` of each name; a name the lock lacks raises."""
    missing = [n for n in names if normalise(n) not in versions]
    if missing:
        raise SystemExit(f"gpu_wheels: not in uv.lock: {missing}")
    return [f"{n}=={versions[normalise(n)]}" for n in names]


def build(dest: Path = WHEELS) -> list[Path]:
    """Fills ``dest`` with the carried wheels; returns them."""
    image = image_packages()
    clash = [n for n in (*CARRIED, *SOURCE_BUILT) if normalise(n) in image]
    if clash:
        raise SystemExit(f"gpu_wheels: the image already has {clash}; carrying them would shadow it")
    versions = locked_versions()
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir()
    platforms = [arg for p in PLATFORMS for arg in ("--platform", p)]
    download = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:"]
    download += ["--python-version", "3.12", "--implementation", "cp", *platforms, "-d", str(dest)]
    subprocess.run([*download, *pins(CARRIED, versions)], check=True)
    env = {**os.environ, "DS_BUILD_OPS": "0"}
    wheel = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(dest)]
    subprocess.run([*wheel, *pins(SOURCE_BUILT, versions)], check=True, env=env)
    wheels = sorted(dest.glob("*.whl"))
    total = sum(w.stat().st_size for w in wheels) / 2**20
    for w in wheels:
        print(f"{w.stat().st_size / 2**20:7.2f} MiB  {w.name}")
    print(f"{total:7.2f} MiB  in {len(wheels)} wheels ({dest})")
    if total > BUDGET_MIB:
        raise SystemExit(f"gpu_wheels: {total:.1f} MiB of wheels is over the {BUDGET_MIB} MiB budget")
    return wheels


def _python312() -> str:
    """A Python 3.12 that runs (pyenv's shims are on PATH even where no 3.12 is selected)."""
    candidates = [str(p) for p in sorted(Path.home().glob(".pyenv/versions/3.12*/bin/python3.12"))]
    candidates += [found for found in [shutil.which("python3.12")] if found]
    for candidate in candidates:
        if subprocess.run([candidate, "-c", ""], capture_output=True).returncode == 0:
            return candidate
    raise SystemExit("gpu_wheels: no Python 3.12 here (python3.12 on PATH or under ~/.pyenv)")


def rehearsal_env(folder: Path) -> Path:
    """The rehearsal's Python 3.12 environment (made when absent or stale); returns its interpreter."""
    image = image_packages()
    wanted = [f"{n}=={image[normalise(n)]}" if image[normalise(n)] else n for n in REHEARSAL]
    stamp = hashlib.sha256("\n".join([*wanted, *sorted(image)]).encode()).hexdigest()
    python = folder / "bin" / "python"
    if (folder / ".stamp").exists() and (folder / ".stamp").read_text() == stamp:
        return python
    shutil.rmtree(folder, ignore_errors=True)
    subprocess.run(["uv", "venv", "-q", "--python", _python312(), str(folder)], check=True)
    # torch's own index would give its CPU build; the image's is PyPI's CUDA build, which imports
    # on a CPU machine too (torch.cuda.is_available() is False).
    subprocess.run(["uv", "pip", "install", "-q", "--python", str(python), *wanted], check=True)
    listed = subprocess.run(
        ["uv", "pip", "freeze", "--python", str(python)], check=True, capture_output=True, text=True
    ).stdout.split()
    extra = [n for n in (line.split("==")[0] for line in listed) if normalise(n) not in image]
    if extra:  # dependencies the image does not have: the machine would lack them too
        subprocess.run(["uv", "pip", "uninstall", "-q", "--python", str(python), *extra], check=True)
    (folder / ".stamp").write_text(stamp)
    return python


def main(argv: list[str] | None = None) -> int:
    """``build`` or ``rehearsal-env``."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("command", choices=("build", "rehearsal-env"))
    default_env = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "grpo-gpu-check-py312"
    parser.add_argument("--env", type=Path, default=default_env, help="rehearsal-env: where it lives")
    args = parser.parse_args(argv)
    if args.command == "build":
        build()
    else:
        print(rehearsal_env(args.env))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
