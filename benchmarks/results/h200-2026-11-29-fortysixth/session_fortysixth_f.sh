#!/usr/bin/env bash
# Forty-sixth session, call 6: two shapes the backward's new rule decides unmeasured: 1x1K (no segments: two of 512
# made 1.21 waves, 1.17x; do shorter ones fill the waves?) and dstate 32 (8 lanes, 4-channel programs: 1x32K now
# takes segments of 2048, 2x8K, 0.81 of its last wave, none).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/f"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
timeout 140 python3 benchmarks/tune_scan_segments.py --backward 1x1024x5120:4,128 1x1024x5120:4,256 2>&1 \
  | grep -v -i warn | tee "$OUT/f/tune-bwd-1x1K.txt"
timeout 190 python3 benchmarks/tune_scan_segments.py --dstate 32 --backward 1x32768x5120:8,0 1x32768x5120:8,512 \
  1x32768x5120:8,8192 2x8192x5120:8,512 2x8192x5120:8,1024 2>&1 | grep -v -i warn | tee "$OUT/f/tune-bwd-n32.txt"
