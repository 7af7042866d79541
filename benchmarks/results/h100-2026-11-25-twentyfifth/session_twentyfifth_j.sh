#!/usr/bin/env bash
# Twenty-fifth session, call 10: the GPU tests of the SSD backward's tiles (pair products in halves, the default now),
# its real shapes, options and deterministic mode.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
timeout 140 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_ssd_backward.py \
  -k "tiles or gpu or every_option or deterministic or states_in_place" 2>&1 | tee "$OUT/call10-tests-bwd.txt" \
  | grep -E "^FAILED|^E  |passed|failed|SEED" | head -20
