#!/usr/bin/env bash
# Fifty-fifth session, call 3 (about 420 s): SHARED_CHUNKS_DENSE and SHARED_TILES_DENSE now on by default (call 2:
# backward -6.4 %, forward -7.3 % on the shared-rows mix, the control unchanged). The selective scan's packed GPU tests
# with them on (the NaN test's "shared-rows" form keeps the off form), and fuzz of selective_scan with a line a case.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/c"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 230 python3 -m pytest -v -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short -n 14 \
  tests/ops/test_selective_scan.py -k "packed or rows or varlen or nan or clean" > "$OUT/c/tests.txt" 2>&1
echo "pytest rc $?"; grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/c/tests.txt" | tail -8
grep -c PASSED "$OUT/c/tests.txt"
timeout 150 python3 -m tests.fuzz.fuzz --seed 61 --budget 110 --ops selective_scan --verbose > "$OUT/c/fuzz.txt" 2>&1
echo "fuzz rc $?"; tail -8 "$OUT/c/fuzz.txt" | cut -c1-600
