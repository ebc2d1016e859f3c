#!/usr/bin/env bash
# memplan's own GPU sweep on a bare GPU machine (Python, torch, numpy, psutil, nvidia-ml-py;
# no DuckDB, no pandas), then its peaks beside the outside script's (docs/gpu.md):
#   OUT=/some/folder bash scripts/gpu_sweep.sh            # from the checkout's root
# Writes $OUT/records (one run record a configuration: `memplan import $OUT/records` on a
# machine with memplan's stack), $OUT/comparison.txt, $OUT/sweep.log, $OUT/env.txt.
# BUDGET_S (default 360): the sweep stops before a configuration it leaves no room for;
# DEVICE (default cuda); CONFIGS: the configurations instead of the list below (a CPU
# rehearsal: DEVICE=cpu CONFIGS="unet3d:16x16x16:1:float32:4:2" bash scripts/gpu_sweep.sh).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT=${OUT:-/tmp/gpu_out}
BUDGET_S=${BUDGET_S:-360}
DEVICE=${DEVICE:-cuda}
PYTHON=${PYTHON:-python3}
GPU_LINES=${GPU_LINES:-data/gpu/h200-torch-2026-11-28.jsonl}
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
mkdir -p "$OUT/records"
need="import torch, numpy, psutil"; [ "$DEVICE" = cpu ] || need="$need, pynvml"
"$PYTHON" -c "$need" || { echo "$PYTHON lacks one of: torch numpy psutil nvidia-ml-py (pynvml)"; exit 2; }
{
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>&1
  "$PYTHON" -c 'import sys, torch, numpy, psutil; print(sys.version); print("torch", torch.__version__, torch.version.cuda, torch.backends.cudnn.version(), "numpy", numpy.__version__, "psutil", psutil.__version__)'
  "$PYTHON" -m pip show nvidia-ml-py 2>/dev/null | grep -E "^(Name|Version)"
  nproc; free -g
} > "$OUT/env.txt" 2>&1

# Most useful first: a spread of the configurations also in $GPU_LINES (both networks, every
# batch, both precisions, small to large), one that cannot fit on a 141 GB GPU (the oom
# path), then the rest of $GPU_LINES, then configurations it does not have.
u=unet3d
spread="$u:128x128x128:1:float32 $u:256x256x256:1:float32 $u:64x64x64:2:float32
$u:192x192x192:2:float32 $u:128x128x128:4:float32 $u:256x256x256:4:float32 $u:96x96x96:8:float32
$u:192x192x192:8:float32 alexnet:224x224:256:float32 alexnet:224x224:1024:float32
alexnet:224x224:32:float32 alexnet:224x224:1024:mixed_bfloat16 $u:128x128x128:2:mixed_bfloat16
$u:256x256x256:4:mixed_bfloat16"
too_big="$u:256x256x256:8:float32"
rest=""
for b in 1 2 4; do for s in 32 64 96 160 192 224 256 128; do rest="$rest $u:${s}x${s}x${s}:$b:float32"; done; done
for s in 32 64 128 160; do rest="$rest $u:${s}x${s}x${s}:8:float32"; done
for b in 64 128 512; do rest="$rest alexnet:224x224:$b:float32"; done
rest="$rest alexnet:224x224:256:mixed_bfloat16"
for b in 1 2 4; do for s in 64 128 192 256; do rest="$rest $u:${s}x${s}x${s}:$b:mixed_bfloat16"; done; done
beyond="$u:176x176x176:3:float32 $u:208x160x144:6:float32 $u:144x144x144:12:float32
$u:128x128x128:2:float32:32 $u:160x160x160:2:float32:16:4 alexnet:224x224:2048:float32"
# Repeats of the spread are skipped: a configuration the folder holds is not run again.
CONFIGS=${CONFIGS:-$spread $too_big $rest $beyond}

# shellcheck disable=SC2086  # one configuration a word
timeout $((BUDGET_S + 90)) "$PYTHON" -m profiling.folder_sweep --out "$OUT/records" \
  --device "$DEVICE" --budget-s "$BUDGET_S" --timeout-s 120 $CONFIGS 2>&1 | tee "$OUT/sweep.log"
echo "sweep exit ${PIPESTATUS[0]}" | tee -a "$OUT/sweep.log"
"$PYTHON" -m profiling.folder_compare "$OUT/records" "$GPU_LINES" 2>&1 | tee "$OUT/comparison.txt"
