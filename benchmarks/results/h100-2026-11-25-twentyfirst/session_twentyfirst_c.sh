#!/usr/bin/env bash
# Twenty-first session, third GPU call: call 2's A/B had the refactored kernels 5 % slower at dim 1536 1x8K (forward
# and backward) and even elsewhere, with identical SASS instruction counts offline. Here: the A/B's own noise (the
# current scan.py against a copy of itself loaded from a file) and the real A/B again, 5 rounds, with the compiled
# kernels' registers and spills and the gradients' differences one by one.
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=benchmarks/results/h100-2026-11-25-twentyfirst  # scan_8029b98.py: git show 8029b98:flashssm/ops/selective_scan/scan.py (not kept)
cp flashssm/ops/selective_scan/scan.py /tmp/scan_copy.py
timeout 200 python3 benchmarks/ab_scan_code.py --old /tmp/scan_copy.py --rounds 5 m1train-130m-1x8K \
  > "$OUT/call3-ab-control.txt" 2>&1
echo "control: exit $?"; grep -v -i warn "$OUT/call3-ab-control.txt" | tail -7
timeout 300 python3 benchmarks/ab_scan_code.py --old $R/scan_8029b98.py --rounds 5 m1train-130m-1x8K \
  m1train-2.8b-8x2K > "$OUT/call3-ab-code.txt" 2>&1
echo "ab: exit $?"; grep -v -i warn "$OUT/call3-ab-code.txt" | tail -14
