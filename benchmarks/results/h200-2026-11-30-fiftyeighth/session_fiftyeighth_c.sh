#!/usr/bin/env bash
# Fifty-eighth session, call 3 (about 300 s): where the training backward's chain launch (_dstates_kernel, 0.39 ms at
# 8x4K: ~1.0 GB of its own traffic, 2.6 TB/s against the 4.22 TB/s copy rate) and its paths launch wait on the H200
# (call 2: neither more pipeline stages nor more warps help). Nsight Compute's sections and stall samples per SASS
# instruction (profile_ssd_backward.sh), train-2.7b-8x4K.
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
for k in _dstates_kernel _tiles_paths_kernel; do
  timeout 280 bash benchmarks/profile_ssd_backward.sh train-2.7b-8x4K "$OUT/ncu" "$k" > "$OUT/ncu-$k.txt" 2>&1
  echo "== $k rc $?"
  grep -E "Duration|Memory Throughput|DRAM Throughput|Registers Per|Achieved Occupancy|Theoretical Occ|Issue Slots Busy|Dynamic Shared|Block Limit|Waves Per SM" "$OUT/ncu/sections-train-2.7b-8x4K-$k.txt" | head -20
  head -45 "$OUT/ncu/stalls-train-2.7b-8x4K-$k.txt" | cut -c1-180
done
cd "$OUT" && tar czf ncu.tgz ncu && rm -rf ncu
