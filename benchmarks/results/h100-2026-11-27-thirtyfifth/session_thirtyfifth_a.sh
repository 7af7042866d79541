#!/usr/bin/env bash
# Thirty-fifth session, call 1 (H100): where the tiles backward's paths launch (_tiles_paths_kernel, 0.75 ms of a
# 2.9 ms training call at 8x4K, 1.8 TB/s of its 1.34 GB) waits: Nsight Compute sections and stall sampling at 8x4K
# and 1x32K; the pair launch (_tiles_bc_kernel) at 1x32K, where it is 0.66 ms.
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,driver_version --format=csv > "$OUT/env.txt"
timeout 200 bash benchmarks/profile_ssd_backward.sh train-2.7b-8x4K "$OUT" _tiles_paths_kernel > /dev/null 2>&1
timeout 150 bash benchmarks/profile_ssd_backward.sh train-2.7b-1x32K "$OUT" _tiles_paths_kernel > /dev/null 2>&1
timeout 150 bash benchmarks/profile_ssd_backward.sh train-2.7b-1x32K "$OUT" _tiles_bc_kernel > /dev/null 2>&1
ls -la "$OUT"
for f in "$OUT"/sections-*.txt; do echo "== $f"; grep -E "Duration|DRAM Throughput|Memory Throughput|Registers Per|Achieved Occupancy|Theoretical Occupancy|Compute \(SM\)|Shared Memory Config|Dynamic Shared|L2 Hit|L1/TEX Hit|Issue Slots Busy|Block Limit|Waves Per SM" "$f"; done
for f in "$OUT"/stalls-*.txt; do echo "== $f"; head -40 "$f"; done
