#!/usr/bin/env bash
# Twenty-first session, second GPU call: call 1's A/B again (the old module's import failed there: a module loaded
# from a file must be in sys.modules for its dataclasses), then the selective-scan GPU tests on the refactored code.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=benchmarks/results/h100-2026-11-25-twentyfirst  # scan_8029b98.py: git show 8029b98:flashssm/ops/selective_scan/scan.py (not kept)
timeout 300 python3 benchmarks/ab_scan_code.py --old $R/scan_8029b98.py --rounds 3 \
  m1train-2.8b-8x2K m1train-130m-1x8K m1train-n128-1x1K > "$OUT/call2-ab-code.txt" 2>&1
echo "ab: exit $?"; grep -v -i warn "$OUT/call2-ab-code.txt" | tail -16
timeout 290 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_selective_scan.py \
  > "$OUT/call2-tests-scan.txt" 2>&1
echo "tests: exit $?"; tail -3 "$OUT/call2-tests-scan.txt"
