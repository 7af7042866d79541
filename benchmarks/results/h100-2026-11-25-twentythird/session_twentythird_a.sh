#!/usr/bin/env bash
# Twenty-third session, first GPU call: dB/dC's channel sums by reduce-scatter in the selective scan's backward
# (DBC_SCATTER), A/B against tl.sum's butterfly in one process, then the selective-scan GPU tests.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 240 python3 benchmarks/ab_scan_flag.py --flag DBC_SCATTER --rounds 5 m1train-2.8b-8x2K m1train-130m-1x8K \
  m1train-2.8b-1x32K > "$OUT/call1-ab-scatter.txt" 2>&1
echo "ab: exit $?"; grep -v -i warn "$OUT/call1-ab-scatter.txt" | tail -30
timeout 300 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_selective_scan.py \
  > "$OUT/call1-tests-scan.txt" 2>&1
echo "tests: exit $?"; grep -E "passed|failed|Error" "$OUT/call1-tests-scan.txt" | tail -15
