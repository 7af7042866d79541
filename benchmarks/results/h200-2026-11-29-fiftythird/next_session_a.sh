#!/usr/bin/env bash
# Ready for the next session (about 500 s): what the fifty-third session changed after its device time was spent.
# (1) The selective scan's packed paths: selects instead of multiplications by 0 at sequence boundaries, and the
# rows' edge tiles gated, so that a NaN or inf stays in its sequence (offline sm_90 only: dense SASS identical, the
# packed backward +3-6 % of instructions). The selective-scan GPU file whole (the new
# test_packed_nan_stays_in_its_sequence among its packed tests), the SSD backward's new NaN test, 60 s of fuzz.
# (2) Its cost on the packed workloads: ab_scan_code.py against scan.py before the change (22dffcb), alternating in
# one process; a dense workload as the control (its kernels' SASS is unchanged, so it shows the A/B's noise).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/a"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 300 python3 -m pytest -v -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short -n 14 \
  tests/ops/test_selective_scan.py "tests/ops/test_ssd_backward.py::test_varlen_nan_stays_in_its_sequence" \
  > "$OUT/a/tests.txt" 2>&1
echo "pytest rc $?"; grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/a/tests.txt" | tail -8
git show 22dffcb:flashssm/ops/selective_scan/scan.py > /tmp/scan_old.py
timeout 240 python3 benchmarks/ab_scan_code.py --old /tmp/scan_old.py --rounds 5 m1train-2.8b-packed-8x2K \
  m1train-2.8b-packed-64x256 m1-2.8b-packed-8x2K m1train-2.8b-8x2K > "$OUT/a/ab.txt" 2>&1
echo "ab rc $?"; tail -20 "$OUT/a/ab.txt"
timeout 90 python3 -m tests.fuzz.fuzz --seed 57 --budget 60 --ops selective_scan > "$OUT/a/fuzz.txt" 2>&1
echo "fuzz rc $?"; tail -3 "$OUT/a/fuzz.txt" | cut -c1-600
