#!/usr/bin/env bash
# Thirty-sixth session, call 9 (H100): the tiles kernel with 8 warps a program instead of 4 (the same 128-register cap:
# half the tile elements a thread, two programs an SM instead of four), training calls at 8x4K and 1x32K.
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,driver_version --format=csv > "$OUT/env.txt"
timeout 200 python3 benchmarks/ab_train_flag.py flashssm.ops.ssd.backward_tiles.TILES_WARPS --value 4 --value 8 \
  --rounds 5 --kernel _tiles_kernel 2>&1 | grep -v Warn | tee "$OUT/call9-ab-tiles-warps.txt"
