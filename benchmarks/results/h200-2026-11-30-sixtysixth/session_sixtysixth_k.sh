#!/usr/bin/env bash
# Sixty-sixth session, call 11 (about 50 s): the block norm's backward with dy in bf16 and x in fp32 (call 9's
# profile: 325 -> 477 us a launch), warp counts.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONPATH=$PWD
timeout 100 python3 benchmarks/time_norm_mixed.py > "$OUT/norm-mixed.txt" 2>&1
echo "== rc $?"; grep -v -i warn "$OUT/norm-mixed.txt" | tail -10
