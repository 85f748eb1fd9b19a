#!/usr/bin/env bash
# GPU check of issue 30 (vLLM rollout engine, weight sync, GRPO steps at Qwen3-VL-2B shape) on a
# lent machine: one H200, about 10 minutes, a copy of this working tree, no internet.
#
# Assumptions (nothing is installed; what is missing is a row of the table, not a failure):
#   * a Python with torch (CUDA build), transformers (Qwen3-VL) and this workspace's packages:
#     the workspace venv (.venv, `uv sync` done before the copy) or $PYTHON;
#   * vllm preinstalled in that Python (>= 0.11, built for its torch): without it the rollout
#     table says "vllm missing" and the GRPO steps run with the hf engine;
#   * the real desktop (Xvfb, LibreOffice) present for the desktop task: without it its row says
#     "unavailable: ..." (pass --no-desktop through GPU_CHECK_ARGS to skip it).
#
# Each phase runs in a process of its own so one phase's engine never holds GPU memory in the next;
# the checkpoint (random weights, 2B shape) is built once. Tables go to stdout and $OUT (or
# ./gpu_check_out) as JSON.
#
#   bash tools/gpu_check.sh            # GPU_CHECK_ARGS="--steps 3 --no-desktop" to change the run
set -uo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-}"
if [[ -z "$PYTHON" ]]; then
  if [[ -x .venv/bin/python ]]; then PYTHON=.venv/bin/python; else PYTHON=python3; fi
fi
DEST="${OUT:-gpu_check_out}"
mkdir -p "$DEST"
CKPT="$DEST/checkpoint-2b"
ARGS=(--device cuda --shape 2b --checkpoint "$CKPT")
read -r -a EXTRA <<<"${GPU_CHECK_ARGS:-}"

echo "== environment"
"$PYTHON" - <<'PY'
import importlib, torch
print("torch", torch.__version__, "cuda", torch.version.cuda, "device", torch.cuda.get_device_name(0) if torch.cuda.is_available() else None)
for name in ("transformers", "vllm", "deepspeed", "peft"):
    try:
        print(name, importlib.import_module(name).__version__)
    except Exception as exc:  # reported, the check goes on
        print(name, "missing:", type(exc).__name__, exc)
PY

status=0
echo "== rollout: vLLM vs HF on the same prompts"
timeout 300 "$PYTHON" tools/gpu_check.py "${ARGS[@]}" --phases rollout --engines vllm,hf --out "$DEST/rollout.json" "${EXTRA[@]}" || status=$?
echo "== GRPO steps (toy env, desktop task)"
timeout 300 "$PYTHON" tools/gpu_check.py "${ARGS[@]}" --phases train --train-engine auto --out "$DEST/train.json" "${EXTRA[@]}" || status=$?
exit "$status"
