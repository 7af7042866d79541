#!/usr/bin/env bash
# Thirteenth session, fifth GPU call: the backward test file on the caps and the S launch; per-kernel costs with
# gradients left out; stall sampling of the tiles kernel and the chain launch.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 240 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_ssd_backward.py -rf 2>&1 \
  | tee "$OUT/tests-bwd.txt" | tail -3
timeout 100 python3 benchmarks/probe_tiles_costs.py --shapes 8x4096 2>&1 | grep -v -i warn | tee "$OUT/costs.txt"
for k in _tiles_kernel _dstates_kernel; do
  timeout 150 bash benchmarks/profile_ssd_backward.sh train-2.7b-8x4K "$OUT/ncu" "$k" > /dev/null 2>&1
done
for f in "$OUT"/ncu/sections-*.txt; do
  echo "== $f"; grep -E "Duration|Registers Per|Achieved Occupancy|Theoretical Occupancy|Block Limit Reg|Issue Slots Busy|Memory Throughput|DRAM Throughput|L2 Hit" "$f" | head -20
done
for f in "$OUT"/ncu/stalls-*.txt; do echo "== $f"; head -4 "$f"; done
