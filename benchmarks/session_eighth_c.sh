#!/usr/bin/env bash
# Eighth session, third GPU call: with the 168-register cap on every forward, where one lane a channel
# still beats two (larger batches), whether four lanes beat two at 4x8K under the cap, one warp against two
# at four lanes, and two lanes with segments at batch 1. Writes under $OUT.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 400 python3 benchmarks/tune_scan_segments.py --forward \
  16x2048x5120:1,1,0,8,168 16x2048x5120:2,1,0,8,168 \
  32x2048x5120:1,1,0,8,168 32x2048x5120:2,1,0,8,168 \
  8x2048x5120:2,1,0,8,168 8x2048x5120:4,1,0,8,168 8x2048x5120:4,2,0,8,168 \
  4x8192x5120:2,1,0,8,168 4x8192x5120:4,2,0,8,168 4x8192x5120:4,1,0,8,168 \
  2x16384x5120:4,2,0,8,168 2x16384x5120:4,1,0,8,168 \
  1x32768x5120:2,1,3648,8,168 \
  2>&1 | tee "$OUT/tune-lanes.txt"
