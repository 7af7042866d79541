#!/usr/bin/env bash
# Thirty-sixth session, call 8 (H100): the tiles kernel's pipeline stages 1 (default) against 2 and 3, training calls
# at 8x4K and 1x32K (call 7 found a third of its stall samples on shared-memory stores waiting for global loads).
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,driver_version --format=csv > "$OUT/env.txt"
timeout 200 python3 benchmarks/ab_train_flag.py flashssm.ops.ssd.backward_tiles.TILES_STAGES --value 1 --value 2 \
  --value 3 --rounds 5 --kernel _tiles_kernel 2>&1 | grep -v Warn | tee "$OUT/call8-ab-tiles-stages.txt"
