#!/usr/bin/env bash
# Twenty-sixth session, call 9: the tiles kernel at two stages (s2) against one, now that its pair products split
# (offline at the 128 cap: 20 -> 12 B spilled, 16 -> 37 KB of shared memory, four programs an SM either way); then the
# GPU tests of the SSD backward file with two stages as the default (this checkout's copy edited here).
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
timeout 120 python3 benchmarks/ab_tiles.py 3 --shapes 8x4096,1x32768 --opts none,dz --profile \
  --variants tiles,tiles:s2 2>&1 | grep -v Warn | grep -v warn_once | tee "$OUT/call9-ab-tiles-stages.txt"
sed -i 's/^TILES_WARPS, TILES_STAGES = 4, 1$/TILES_WARPS, TILES_STAGES = 4, 2/' flashssm/ops/ssd/backward_tiles.py
grep -n "^TILES_WARPS, TILES_STAGES" flashssm/ops/ssd/backward_tiles.py
timeout 200 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_ssd_backward.py 2>&1 \
  | tee "$OUT/call9-tests-bwd-s2.txt" | grep -E "^FAILED|^E  |passed|failed|SEED" | head -20
