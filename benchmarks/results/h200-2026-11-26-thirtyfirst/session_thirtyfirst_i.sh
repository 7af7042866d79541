#!/usr/bin/env bash
# Thirty-first session, call 9 (H100): with the early publish's spans of 8192 tokens, the training path at long inputs:
# check_huge's SSD backward at 1M tokens against float64 in pieces, then the SSD backward test file.
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 240 python3 benchmarks/check_huge.py ssd-bwd 2>&1 | grep -v Warn | tail -8 | tee "$OUT/call9-huge-bwd.txt"
timeout 300 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_ssd_backward.py \
  > "$OUT/call9-tests-bwd.txt" 2>&1
grep -E "^FAILED|passed|failed" "$OUT/call9-tests-bwd.txt" | tail -20
