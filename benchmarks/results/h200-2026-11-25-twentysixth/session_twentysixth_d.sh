#!/usr/bin/env bash
# Twenty-sixth session, call 4: the decay gradient's column sums from the tiles kernel's bracket . x (C1, the default
# now; the pair launch sums rows only, the tiles kernel's pair products split) against both sums in the pair launch
# (C0): backward alone, per kernel, errors against float64 at 2x4K; the deterministic mode; the GPU tests of the SSD
# backward file.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader > "$OUT/device4.txt" 2>&1
timeout 260 python3 benchmarks/ab_tiles.py 3 --shapes 8x4096,32x2048,1x32768 --opts none,dz --profile \
  --errors --errors-shape 2x4096 --variants tiles:C0,tiles 2>&1 | grep -v Warn | grep -v warn_once \
  | tee "$OUT/call4-ab-cols.txt"
timeout 60 python3 benchmarks/ab_tiles.py 3 --shapes 8x4096 --opts none --variants tiles:det:C0,tiles:det 2>&1 \
  | grep -v Warn | grep -v warn_once | tee "$OUT/call4-ab-cols-det.txt"
timeout 220 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_ssd_backward.py 2>&1 \
  | tee "$OUT/call4-tests-bwd.txt" | grep -E "^FAILED|^E  |passed|failed|SEED" | head -20
