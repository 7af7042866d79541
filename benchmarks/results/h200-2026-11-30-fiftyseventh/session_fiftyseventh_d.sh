#!/usr/bin/env bash
# Fifty-seventh session, call 4 (about 250 s): the selective scan's test file on the GPU after PEEL's rule (54f9bdd:
# the forward peels its rows' edge tiles where it stores the states or the sequences average <= 1024 tokens), and the
# bench's packed Mamba-1 rows with the rule's default against PEEL off (ab_scan_flag --value: None against False).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/t"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 300 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider -p no:logging -n 14 \
  tests/ops/test_selective_scan.py > "$OUT/t/tests-scan.txt" 2>&1
echo "pytest scan rc $?"; grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/t/tests-scan.txt" | tail -8
timeout 200 python3 benchmarks/ab_scan_flag.py --flag PEEL_EDGE_TILES_FWD --value False --value None --rounds 5 \
  m1train-2.8b-packed-64x256 m1train-2.8b-packed-8x2K > "$OUT/t/ab-rule.txt" 2>&1
echo "ab rule rc $?"; grep -v "^\s*$" "$OUT/t/ab-rule.txt" | tail -12 | cut -c1-300
