#!/usr/bin/env bash
# Nineteenth session, review call: the tiles' atomic-or-slot stores folded into one helper (_sum_into); the
# deterministic, tiles and fill tests on the GPU (triton 3.6), and the per-kernel times of both modes against call 1.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 300 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_ssd_backward.py \
  -k "deterministic or tiles or fills or gpu_real" 2>&1 | tee "$OUT/call7-tests.txt" \
  | grep -E "^FAILED|^E  |passed|failed|SEED" | head -20
timeout 150 python3 benchmarks/probe_tiles_costs.py --shapes 8x4096 --variants all --deterministic 2>&1 \
  | grep -v Warn | tee "$OUT/call7-costs-det.txt" | cut -c1-200
