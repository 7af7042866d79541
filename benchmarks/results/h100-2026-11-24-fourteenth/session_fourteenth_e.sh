#!/usr/bin/env bash
# Fourteenth session, fifth GPU call: the tiles kernel with bracket's state part taken after the pairs (fewer live
# registers: offline 140 -> 76 B spilled at 128), per kernel against the previous commit (carry build/base), twice;
# then the backward's GPU tests.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
for i in 1 2; do
  PYTHONPATH=$PWD/build/base:$PWD timeout 100 python3 benchmarks/probe_tiles_costs.py --shapes 8x4096,1x32768 2>&1 \
    | grep -v -i warn | grep " all:" | sed 's/^/base /' | tee -a "$OUT/costs.txt"
  PYTHONPATH=$PWD timeout 100 python3 benchmarks/probe_tiles_costs.py --shapes 8x4096,1x32768 2>&1 \
    | grep -v -i warn | grep " all:" | sed 's/^/new  /' | tee -a "$OUT/costs.txt"
done
export PYTHONPATH=$PWD
timeout 300 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_ssd_backward.py 2>&1 \
  | tee "$OUT/tests-bwd.txt" | tail -4
