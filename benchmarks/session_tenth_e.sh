#!/usr/bin/env bash
# Tenth session, GPU call: the SSD forward with one pipeline stage against two (the chain backward gained 14 %
# from it), late mode (8x4K, 32x2K) and early mode (1x32K, 1x128K), each candidate twice, checked against float64
# first (the forward at BLOCK_P 32 was miscompiled with one stage by triton 3.6). Writes under $OUT.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 250 python3 benchmarks/tune_ssd_forward.py --mode late --workload 2.7b-8x4K --workload 2.7b-32x2K \
  --candidate 64,64,4,2,0,1,8,1 --candidate 64,64,4,1,0,1,8,1 --candidate 64,64,4,2,0,1,8,1 --candidate 64,64,4,1,0,1,8,1 \
  2>&1 | grep -v -i warn | tee $OUT/tune-fwd-stages-late.txt
timeout 250 python3 benchmarks/tune_ssd_forward.py --mode early --workload 2.7b-1x32K --workload 2.7b-1x128K \
  --candidate 64,64,4,2,0,1,8,0 --candidate 64,64,4,1,0,1,8,0 --candidate 64,64,4,2,0,1,8,0 --candidate 64,64,4,1,0,1,8,0 \
  2>&1 | grep -v -i warn | tee $OUT/tune-fwd-stages-early.txt
