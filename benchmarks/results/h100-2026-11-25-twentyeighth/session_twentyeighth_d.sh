#!/usr/bin/env bash
# Twenty-eighth session, call 4: the forward's first pass (segments, batch 1) loading each tile's u and delta a tile
# ahead (`scan.TILE_AHEAD_FWD`, True in this checkout): A/B at batch 1, then the selective-scan GPU tests with it on.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$OUT/device4.txt" 2>&1
timeout 200 python3 benchmarks/ab_scan_flag.py --flag TILE_AHEAD_FWD --rounds 5 \
  m1-2.8b-1x32K m1-130m-1x32K m1train-2.8b-1x32K 2>&1 | grep -v -i warn | tee "$OUT/call4-ab-tile-ahead.txt"
timeout 330 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_selective_scan.py 2>&1 \
  | tee "$OUT/call4-tests-scan.txt" | grep -E "^FAILED|^E  |passed|failed|SEED" | head -20
