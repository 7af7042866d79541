#!/usr/bin/env bash
# Thirty-sixth session, call 7 (H100): where the tiles kernel (_tiles_kernel, 0.74 ms of 8x4K's 2.9 ms training call,
# the largest launch; 0.84 at 1x32K) waits now: Nsight Compute sections and stall sampling at 8x4K and 1x32K.
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,driver_version --format=csv > "$OUT/env.txt"
timeout 200 bash benchmarks/profile_ssd_backward.sh train-2.7b-8x4K "$OUT" _tiles_kernel > /dev/null 2>&1
timeout 170 bash benchmarks/profile_ssd_backward.sh train-2.7b-1x32K "$OUT" _tiles_kernel > /dev/null 2>&1
for f in "$OUT"/sections-*.txt; do echo "== $f"; grep -E "Duration|DRAM Throughput|Memory Throughput|Registers Per|Achieved Occupancy|Theoretical Occupancy|Compute \(SM\)|Dynamic Shared|L2 Hit|L1/TEX Hit|Issue Slots Busy|Block Limit|Waves Per SM|Local" "$f"; done
for f in "$OUT"/stalls-*.txt; do echo "== $f"; head -45 "$f"; done
