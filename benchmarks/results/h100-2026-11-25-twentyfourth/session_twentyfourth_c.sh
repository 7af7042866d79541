#!/usr/bin/env bash
# Twenty-fourth session, call 3: D's gradient in the tiles kernel (TILES_DD; the chain launch then steps 128 tokens)
# against the chain launch's share at its steps of 64 (u0) and of 128 (u0:d128); backward alone, per kernel; then the
# GPU tests of the SSD backward file on this code (tiles chunk 128, dD in the tiles).
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
timeout 250 python3 benchmarks/ab_tiles.py 3 --shapes 8x4096,32x2048 --opts d,dz --profile --errors \
  --variants tiles,tiles:u0,tiles:u0:d128 2>&1 | grep -v Warn | tee "$OUT/call3-ab-dd.txt" | grep -v "^  "
timeout 320 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_ssd_backward.py 2>&1 \
  | tee "$OUT/call3-tests-bwd.txt" | grep -E "^FAILED|^E  |passed|failed|SEED" | head -20
