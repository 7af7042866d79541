#!/usr/bin/env bash
# Thirteenth session, first GPU call: where the tiles backward's time goes. Per-kernel times with gradients left
# out (probe_tiles_costs.py), then Nsight Compute sections and stall sampling of the tiles kernel and the pair launch.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 150 python3 benchmarks/probe_tiles_costs.py 2>&1 | grep -v -i warn | tee "$OUT/costs.txt"
for k in _tiles_kernel _tiles_bc_kernel; do
  timeout 150 bash benchmarks/profile_ssd_backward.sh train-2.7b-8x4K "$OUT/ncu" "$k" > /dev/null 2>&1
done
for f in "$OUT"/ncu/sections-*.txt; do
  echo "== $f"; grep -E "Duration|Registers|Achieved Occupancy|Theoretical Occupancy|Block Limit|Issue Slots Busy|Executed Ipc A|Compute \(SM\) Throughput|Memory Throughput|DRAM Throughput|L2 Hit|Shared Memory Config|Dynamic Shared|Warp Cycles Per Issued|No Eligible|Pipe" "$f" | head -40
done
for f in "$OUT"/ncu/stalls-*.txt; do echo "== $f"; head -45 "$f"; done
