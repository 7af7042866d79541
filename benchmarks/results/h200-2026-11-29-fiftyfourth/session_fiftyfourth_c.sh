#!/usr/bin/env bash
# Fifty-fourth session, call 3 (about 420 s): the forward's edge tiles with the inputs selected (decay 1, B 0) instead
# of the state (commit after d7f4d85). (1) its cost against d7f4d85's scan.py (the state selected): the packed
# workloads (the 64 x 256 inference forward was 6 % slower since the NaN fix) and the dense control; (2) the packed
# and NaN tests on the GPU (A = -inf now among them) and the layouts test the last call's timeout cut; (3) fuzz.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/c"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
git show d7f4d85:flashssm/ops/selective_scan/scan.py > /tmp/scan_base.py
timeout 200 python3 benchmarks/ab_scan_code.py --old /tmp/scan_base.py --rounds 5 m1train-2.8b-packed-64x256 \
  m1-2.8b-packed-8x2K m1train-2.8b-packed-8x2K m1train-2.8b-8x2K > "$OUT/c/ab-code.txt" 2>&1
echo "ab code rc $?"; grep -E "^m1|ms|spills|Error" "$OUT/c/ab-code.txt" | tail -20
timeout 150 python3 -m pytest -v -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short -n 14 \
  tests/ops/test_selective_scan.py -k "nan or packed_rows or backward_layouts or public_path" > "$OUT/c/tests.txt" 2>&1
echo "pytest rc $?"; grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/c/tests.txt" | tail -8
timeout 60 python3 -m tests.fuzz.fuzz --seed 59 --budget 40 --ops selective_scan --verbose > "$OUT/c/fuzz.txt" 2>&1
echo "fuzz rc $?"; tail -4 "$OUT/c/fuzz.txt" | cut -c1-600
