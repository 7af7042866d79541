#!/usr/bin/env bash
# Fifty-fourth session, call 2 (about 560 s): the backward's edge chunks run only their tiles that hold the row's own
# tokens (EDGE_TILES_BWD).
# (1) the selective scan's packed GPU tests (rows, shared rows, NaN locality, layouts);
# (2) its cost against the code before the packed NaN fix (22dffcb), packed workloads with the dense control the last
#     call's A/B never reached, and the switch alone on the two packed training workloads;
# (3) selective_scan fuzz (last call's 90 s ended inside its first cases' compiles).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/b"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 200 python3 -m pytest -v -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short -n 14 \
  tests/ops/test_selective_scan.py -k "packed or rows or varlen or nan or layout" > "$OUT/b/tests.txt" 2>&1
echo "pytest rc $?"; grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/b/tests.txt" | tail -8
git show 22dffcb:flashssm/ops/selective_scan/scan.py > /tmp/scan_old.py
timeout 200 python3 benchmarks/ab_scan_code.py --old /tmp/scan_old.py --rounds 5 m1train-2.8b-packed-64x256 \
  m1train-2.8b-packed-8x2K m1train-2.8b-8x2K m1-2.8b-packed-8x2K > "$OUT/b/ab-code.txt" 2>&1
echo "ab code rc $?"; grep -E "^m1|ms|spills|Error" "$OUT/b/ab-code.txt" | tail -20
timeout 110 python3 benchmarks/ab_scan_flag.py --flag EDGE_TILES_BWD --rounds 5 m1train-2.8b-packed-64x256 \
  m1train-2.8b-packed-8x2K > "$OUT/b/ab-flag.txt" 2>&1
echo "ab flag rc $?"; tail -12 "$OUT/b/ab-flag.txt"
timeout 45 python3 -m tests.fuzz.fuzz --seed 58 --budget 30 --ops selective_scan --verbose > "$OUT/b/fuzz.txt" 2>&1
echo "fuzz rc $?"; tail -3 "$OUT/b/fuzz.txt" | cut -c1-600
