#!/usr/bin/env bash
# Seventeenth session, eighth GPU call, after the review: the stored states saved through save_for_backward and one
# layout helper; the SSD backward tests on the GPU.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 280 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_ssd_backward.py \
  2>&1 | tee "$OUT/call8-tests-bwd.txt" | grep -E "^FAILED|passed|failed|SEED"
