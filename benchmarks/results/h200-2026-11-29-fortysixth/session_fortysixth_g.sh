#!/usr/bin/env bash
# Forty-sixth session, call 7: the backward's segments for short sequences (call 6: at 1x1K segments of 128 took
# 0.88x the unsegmented time, 256 0.97x; the rule takes none under 2048 tokens, and 512 from 2048): does a shorter
# segment, one that leaves the segmented grid's last wave full, win across short shapes?
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/g"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
timeout 230 python3 benchmarks/tune_scan_segments.py --backward 1x1024x5120:4,128 1x1024x5120:4,256 \
  1x2048x5120:4,128 1x2048x5120:4,256 2x1024x5120:4,128 2x1024x5120:4,256 2x1024x5120:4,512 \
  1x2048x1536:4,128 1x2048x1536:4,256 1x1024x1536:4,128 1x1024x1536:4,256 2>&1 | grep -v -i warn \
  | tee "$OUT/g/tune-bwd-short.txt"
