#!/usr/bin/env bash
# Twenty-sixth session, call 3: the tiles' decay gradient from dy . y (DECAY_FROM_Y; Y1, the default now) against the
# pair sums (Y0): backward alone, per kernel, errors against float64 at 2x4K; the deterministic mode; then the GPU
# tests of the SSD backward file (bf16 real shapes, the new test).
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
date -u > "$OUT/start.txt"
timeout 300 python3 benchmarks/ab_tiles.py 3 --shapes 8x4096,32x2048,1x32768 --opts none,dz --profile --memory \
  --errors --errors-shape 2x4096 --variants tiles:Y0,tiles 2>&1 | grep -v Warn | grep -v warn_once \
  | tee "$OUT/call3-ab-y.txt"
timeout 60 python3 benchmarks/ab_tiles.py 3 --shapes 8x4096 --opts none --variants tiles:det:Y0,tiles:det 2>&1 \
  | grep -v Warn | grep -v warn_once | tee "$OUT/call3-ab-y-det.txt"
timeout 200 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_ssd_backward.py 2>&1 \
  | tee "$OUT/call3-tests-bwd.txt" | grep -E "^FAILED|^E  |passed|failed|SEED" | head -20
