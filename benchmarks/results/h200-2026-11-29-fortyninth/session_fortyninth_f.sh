#!/usr/bin/env bash
# Forty-ninth session, call 6 (a one-line command, kept here): the SSD forward's test file whole on the GPU, the first
# whole run since compile-ahead landed. 447 passed, 2 skipped in 106 s (call6/tests-ssd-forward.txt).
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD
timeout 175 python3 -m pytest -q -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short -n 12 \
  tests/ops/test_ssd_forward.py > "$OUT/tests-ssd-forward.txt" 2>&1
echo "pytest rc $?"; grep -E "FAILED|ERROR|passed|failed" "$OUT/tests-ssd-forward.txt" | tail -8
