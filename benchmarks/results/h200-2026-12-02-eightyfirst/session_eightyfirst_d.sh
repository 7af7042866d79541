#!/usr/bin/env bash
# Eighty-first session, call 4: the rest of what the eightieth session owed on the GPU for SHARED_TOKENS_BWD (on since
# a25233c): test_prepared's selective-scan cases and the Mamba-1 models' tests on the GPU (call 1 ran the scan's own
# file: 136 passed), then the differential fuzzer on the selective scan at the models' shapes (the GPU's fast paths:
# segments, rows, shared rows, dstate to 256) for the time left.
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 300 python3 -m pytest -v -p no:cacheprovider -o addopts= -n 8 tests/test_prepared.py tests/models \
  -k "selective_scan or mamba1 or Mamba1 or hybrid" > "$OUT/tests-prepared-models.txt" 2>&1
echo "rc $?" >> "$OUT/tests-prepared-models.txt"
echo "passed $(grep -cE ' PASSED' "$OUT/tests-prepared-models.txt")"
grep -E "FAILED|ERROR|rc |passed|failed" "$OUT/tests-prepared-models.txt" | tail -8
timeout 150 python3 -m tests.fuzz.fuzz --seed 8141 --budget 120 --ops selective_scan --device cuda --shapes model \
  > "$OUT/fuzz-selective-scan-model.txt" 2>&1
echo "rc $?" >> "$OUT/fuzz-selective-scan-model.txt"
tail -6 "$OUT/fuzz-selective-scan-model.txt"
