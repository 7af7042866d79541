#!/usr/bin/env bash
# Twenty-third session, fifth GPU call: the selective-scan backward under intermediate register caps (224 / 200 / 184:
# 9 / 10 / 11 one-warp programs an SM instead of 8; offline 96 / 160 / 228 B spilled against 20 uncapped), 8x2K.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
W=m1train-2.8b-8x2K
timeout 400 python3 benchmarks/tune_selective_scan.py --backward \
  --configs "$W:4,32,1,8;$W:4,32,1,8,224;$W:4,32,1,8,200;$W:4,32,1,8,184" > "$OUT/call5-tune-caps.txt" 2>&1
echo "tune: exit $?"; grep -v -i warn "$OUT/call5-tune-caps.txt" | tail -8
