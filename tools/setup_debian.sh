#!/usr/bin/env bash
# Installs everything the embedded desktop and the tests need on a fresh Debian 12
# machine (run as root): the desktop's apt packages and the uv environment.
# Idempotent: a second run only checks what is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  # display, window manager, session bus, accessibility, input
  xvfb openbox dbus dbus-x11 at-spi2-core libatk-adaptor python3-pyatspi
  xdotool x11-utils x11-xserver-utils python3-xlib python3-tk
  # the sandbox
  bubblewrap util-linux procps
  # applications of the OSWorld desktop
  libreoffice-calc libreoffice-writer libreoffice-impress libreoffice-math libreoffice-gtk3 python3-uno
  fonts-dejavu-core mousepad xfce4-terminal vlc chromium gimp thunderbird imagemagick
  # Ubuntu's PDF viewer (OSWorld's tasks open PDFs in it) and pygame for the snake game
  # of 26150609, whose `pip install pygame` Debian's pip refuses (PEP 668)
  evince python3-pygame
  # Ubuntu's file manager and terminal, which OSWorld's tasks launch by name
  nautilus gnome-terminal
  # Debian's interpreter is the one that imports uno and pyatspi
  python3 python3-pip
  # the libvirt backend: the guest image (tools/build-image), QEMU under libvirt, and what
  # building libvirt-python (the `libvirt` extra, an sdist only) needs
  debootstrap e2fsprogs qemu-system-x86 qemu-utils libvirt-daemon-system libvirt-clients
  libvirt-dev pkg-config gcc python3-dev
  # a private sshd stands in for a remote libvirt host in the SSH tunnel tests
  openssh-server openssh-client
  # code-server for the VS Code tasks (tools/install_code_server.sh): ripgrep in place of
  # @vscode/ripgrep's GitHub download, and what its native addons compile with
  ripgrep g++ make libkrb5-dev
)

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# VS Code's workbench for the desktop's `code` (needs Node 20 on PATH; without it, a note).
bash tools/install_code_server.sh

if ! command -v uv >/dev/null; then
  # Debian's own pip refuses system-wide installs (PEP 668); uv is a standalone binary.
  python3 -m pip install --quiet uv 2>/dev/null || python3 -m pip install --quiet --break-system-packages uv
fi
# One environment on Debian's Python with its system site packages, so the host
# side and the in-desktop guest server share it (uno and pyatspi import only there).
if [ ! -x .venv/bin/python ]; then
  uv venv --python /usr/bin/python3.11 --system-site-packages .venv
fi
uv sync --frozen --all-packages --extra libvirt --extra ray --extra openai --extra anthropic --extra fetch "$@"
# torch, deepspeed and peft (hf: policies, the trainer's `train` extra) with torch as a CPU build: a
# plain resolve would take PyPI's multi-GB CUDA build. This machine family keeps the CPU wheel
# in /opt/wheels; elsewhere uv's configuration in tools/torch-cpu.uv.toml names PyTorch's CPU
# index for this install alone. A GPU machine installs its own build (see the README).
# `uv sync` above removes both (they are not in the lock's default set).
if ! .venv/bin/python -c "import torch, deepspeed, peft" 2>/dev/null; then
  if [ -d /opt/wheels ]; then torch_source=(--find-links /opt/wheels); else
    torch_source=(--config-file tools/torch-cpu.uv.toml); fi
  DS_BUILD_OPS=0 uv pip install --quiet --python .venv/bin/python "${torch_source[@]}" \
    "torch==2.13.0" "deepspeed==0.19.8" "peft==0.21.2"
fi
