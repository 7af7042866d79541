#!/usr/bin/env bash
# Sixteenth session, fourth GPU call: with dt's cumsums loaded (fewer barriers), do other launch shapes win now?
# Late publish at 8x4K and 32x2K, early at 1x32K and 1x128K: sub-chunks of 32, 8 warps, headdim blocks of 32.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 280 python3 benchmarks/tune_ssd_forward.py --mode late --workload 2.7b-8x4K --workload 2.7b-32x2K \
  --candidate 64,64,4,2,0,1,8,1,0,0 --candidate 64,64,4,2,0,1,8,1,0,1 --candidate 32,64,4,3,0,1,8,1,0,1 \
  --candidate 32,64,4,2,0,1,8,1,0,1 --candidate 64,64,8,2,0,1,8,1,0,1 --candidate 64,32,4,2,0,1,8,1,0,1 \
  2>&1 | grep -v -i warn | tee "$OUT/tune-late.txt"
timeout 250 python3 benchmarks/tune_ssd_forward.py --mode early --workload 2.7b-1x32K --workload 2.7b-1x128K \
  --candidate 64,64,4,2,0,1,8,0,0,0 --candidate 64,64,4,2,0,1,8,0,0,1 --candidate 32,64,4,3,0,1,8,0,0,1 \
  --candidate 64,64,8,2,0,1,8,0,0,1 --candidate 64,64,4,2,0,1,4,0,0,1 \
  2>&1 | grep -v -i warn | tee "$OUT/tune-early.txt"
