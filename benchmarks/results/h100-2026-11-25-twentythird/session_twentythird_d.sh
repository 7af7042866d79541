#!/usr/bin/env bash
# Twenty-third session, fourth GPU call: call 3's launch-shape sweep of dstate 128's forward, with its argument fixed.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 400 python3 benchmarks/tune_selective_scan.py --forward --fwd-configs \
  "m1-n128-8x2K:8,8,2;m1-n128-8x2K:8,8,1;m1-n128-8x2K:8,8,4;m1-n128-8x2K:16,8,1;m1-n128-8x2K:16,8,2;m1-n128-8x2K:16,8,4;m1-n128-8x2K:4,8,2;m1-n128-8x2K:4,8,4" \
  > "$OUT/call4-tune-n128-fwd.txt" 2>&1
echo "tune: exit $?"; grep -v -i warn "$OUT/call4-tune-n128-fwd.txt" | tail -14
