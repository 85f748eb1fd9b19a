#!/usr/bin/env bash
# The prepared GPU check (issue 40) on a lent machine as it is: one H100 or H200, no network, the
# image's python3 (3.12, torch 2.11 CUDA, transformers 5.17, peft, accelerate; nothing of this
# workspace), this working tree and the carried `.whl/` (tools/gpu_wheels.py: what the check
# imports that the image lacks, about 5 MiB). Within 5 minutes on one H100 it prints, row by row
# as each is measured (a phase killed by its timeout keeps the rows before it):
#   * HF-engine rollout tokens/s, G = 8 prompts with a 1920x1080 screenshot each, and the gap
#     between the stored and the recomputed log-probs; the vLLM row says why it is absent;
#   * one GRPO step per training set-up (full / LoRA, padded / padding-free, ZeRO-3 on one rank),
#     gradient checkpointing on: rollout and update seconds, training tokens/s, peak memory.
# The 2B-shaped checkpoint (random weights, 4.3 GB) is built under /tmp, never under $OUT.
#
#   python3 tools/gpu_wheels.py build   # here, once: fills .whl/ (uv run --frozen python ...)
#   bash tools/gpu_check.sh             # there: the run carries .whl
#   bash tools/gpu_check.sh --rehearse  # here: the same script on CPU, tiny shapes, in a Python 3.12
#                                       # environment of the image's packages only (builds .whl/ too)
#
# Rows go to stdout and, as JSON lines, to $OUT/gpu_check.jsonl (./gpu_check_out without $OUT).
# The exit status is 0 when every phase ran to its end (a row may still say "failed").
set -uo pipefail
cd "$(dirname "$0")/.."

WORK="$(mktemp -d /tmp/gpu-check.XXXXXX)"  # the checkpoint, the installed wheels, the run dirs
DEST="${OUT:-gpu_check_out}"
mkdir -p "$DEST"
ROWS="$DEST/gpu_check.jsonl"
: >"$ROWS"

if [[ "${1:-}" == "--rehearse" ]]; then
  # The builder needs torch (DeepSpeed's wheel): the workspace's venv has the CPU build.
  BUILDER="${BUILDER_PYTHON:-.venv/bin/python}"
  "$BUILDER" tools/gpu_wheels.py build || exit 2
  PYTHON="$("$BUILDER" tools/gpu_wheels.py rehearsal-env | tail -n 1)" || exit 2
  ARGS=(--device cpu --shape mini --rows 2 --group 2 --max-new-tokens 8)
  PHASE_TIMEOUT=600
  export DS_ACCELERATOR=cpu
else
  PYTHON=python3
  ARGS=(--device cuda --shape 2b)
  PHASE_TIMEOUT=90  # 6 phases stay inside one 10-minute command
fi
if ! compgen -G ".whl/*.whl" >/dev/null; then
  echo "gpu_check: no .whl/ here: run tools/gpu_wheels.py build, and carry .whl" >&2
  exit 2
fi
"$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$WORK/site" .whl/*.whl ||
  exit 2
export PYTHONPATH="$WORK/site:packages/grpo_trainer/src:packages/hybrid_agent/src:packages/osworld_mcp_env/src"
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false DS_BUILD_OPS=0 TMPDIR="$WORK"
ARGS+=(--checkpoint "$WORK/checkpoint" --no-desktop --out "$ROWS")

echo "== environment"
"$PYTHON" - <<'PY'
import importlib, sys, torch
gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "device", gpu)
for name in ("transformers", "peft", "accelerate", "deepspeed", "vllm"):
    try:
        print(name, importlib.import_module(name).__version__)
    except Exception as exc:  # reported; the check goes on
        print(name, "absent:", type(exc).__name__, exc)
PY

status=0
phase() {  # NAME ARGS...: one phase in a process of its own, under its timeout
  local name="$1"
  shift
  echo "== $name"
  timeout "$PHASE_TIMEOUT" "$PYTHON" tools/gpu_check.py "${ARGS[@]}" "$@"
  local rc=$?
  if ((rc != 0)); then
    echo "gpu_check: phase $name ended with status $rc$( ((rc == 124)) && echo " (timed out)")"
    status=1
  fi
}
phase build --phases build
phase rollout --phases rollout --engines hf,vllm
for setup in full-padded full-padding_free lora-padded zero3-full-padded; do
  phase "train $setup" --phases train --setup "$setup"
done
rm -rf "$WORK"
exit "$status"
