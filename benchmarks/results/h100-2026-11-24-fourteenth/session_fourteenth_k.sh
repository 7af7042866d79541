#!/usr/bin/env bash
# Fourteenth session, eleventh GPU call: the chain launch in steps of 128 in both forms without z and D's share; the
# backward's GPU tests, and the per-kernel costs.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 100 python3 benchmarks/probe_tiles_costs.py --shapes 8x4096,1x32768 2>&1 | grep -v -i warn | grep " all:" \
  | tee "$OUT/costs.txt"
timeout 300 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_ssd_backward.py 2>&1 \
  | tee "$OUT/tests-bwd.txt" | tail -4
