#!/usr/bin/env bash
# Twenty-sixth session, call 1: the GPU tests of the SSD backward file (the tiles kernel's pair products in halves and
# the review's refactor had not run there), then the two tuning forms left off last session against the default:
# the paths as a launch a side (L1) and the pair launch's tiles in halves of their j tokens (J1); backward alone,
# per kernel, with the gradients' errors against float64.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$OUT/device.txt" 2>&1
timeout 230 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_ssd_backward.py 2>&1 \
  | tee "$OUT/call1-tests-bwd.txt" | grep -E "^FAILED|^E  |passed|failed|SEED" | head -20
timeout 340 python3 benchmarks/ab_tiles.py 3 --shapes 8x4096,32x2048,1x32768 --opts none,dz --profile \
  --errors --errors-shape 2x4096 --variants tiles,tiles:L1,tiles:J1 2>&1 | grep -v Warn | grep -v warn_once \
  | tee "$OUT/call1-ab-L1-J1.txt"
