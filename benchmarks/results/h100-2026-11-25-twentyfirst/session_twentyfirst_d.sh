#!/usr/bin/env bash
# Twenty-first session, fourth GPU call: the refactor again after call 3 (the tile loads' processing written back as
# before where it changed the compiled passes: the segments' first passes, the forward's output pass, the backward's
# pass 2; offline sm_90 SASS now the same as 8029b98's up to two swapped instructions): A/B against 8029b98, then the
# selective-scan GPU tests.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=benchmarks/results/h100-2026-11-25-twentyfirst  # scan_8029b98.py: git show 8029b98:flashssm/ops/selective_scan/scan.py (not kept)
timeout 300 python3 benchmarks/ab_scan_code.py --old $R/scan_8029b98.py --rounds 5 m1train-130m-1x8K \
  m1train-2.8b-8x2K m1train-n128-1x1K > "$OUT/call4-ab-code.txt" 2>&1
echo "ab: exit $?"; grep -v -i warn "$OUT/call4-ab-code.txt" | tail -18
timeout 290 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_selective_scan.py \
  > "$OUT/call4-tests-scan.txt" 2>&1
echo "tests: exit $?"; tail -2 "$OUT/call4-tests-scan.txt"
