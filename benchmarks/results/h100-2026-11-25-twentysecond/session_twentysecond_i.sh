#!/usr/bin/env bash
# Twenty-second session, ninth GPU call (the review): the B/C prefetch written once (`_prefetch_values`) against
# bbf53f5's scan.py (scan_bbf53f5.py: `git show bbf53f5:flashssm/ops/selective_scan/scan.py`, not kept; offline SASS
# identical but for the backward's per-chunk address arithmetic), ab_scan_flag.py on scan_calls, the GPU tests.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=benchmarks/results/h100-2026-11-25-twentysecond
timeout 200 python3 benchmarks/ab_scan_code.py --old $R/scan_bbf53f5.py --rounds 3 m1train-2.8b-8x2K \
  m1train-130m-1x8K > "$OUT/call9-ab-prefetch-helper.txt" 2>&1
echo "ab: exit $?"; grep -v -i warn "$OUT/call9-ab-prefetch-helper.txt" | tail -12
timeout 120 python3 benchmarks/ab_scan_flag.py --flag BC_INPUT_DTYPE --rounds 1 m1-n128-8x2K m1train-130m-1x8K \
  > "$OUT/call9-ab-flag-check.txt" 2>&1
echo "flag: exit $?"; grep -v -i warn "$OUT/call9-ab-flag-check.txt" | tail -9
timeout 260 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_selective_scan.py \
  > "$OUT/call9-tests-scan.txt" 2>&1
echo "tests: exit $?"; tail -1 "$OUT/call9-tests-scan.txt"
