#!/usr/bin/env bash
# Forty-ninth session, call 5: after the tests' dry-run fixes. (1) The SSD backward tests that failed in call 4 (their
# spies counted the planner's dry run). (2) The selective-scan test file whole on the GPU (not run whole since
# compile-ahead landed; its test_segments and test_packed_rows read the workspaces a dry run used to leave on meta).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/e"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 120 python3 -m pytest -v -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short -n 8 \
  tests/ops/test_ssd_backward.py -k "test_deterministic_tiles or test_deterministic_mode_skips_fills or test_tiles_in_smaller_chunks or test_states_from_forward or test_tiles_states_from_forward" \
  > "$OUT/e/tests-ssd.txt" 2>&1
echo "pytest rc $?"; grep -E "FAILED|ERROR|passed|failed" "$OUT/e/tests-ssd.txt" | tail -8
timeout 360 python3 -m pytest -v -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short -n 10 \
  tests/ops/test_selective_scan.py > "$OUT/e/tests-scan.txt" 2>&1
echo "pytest rc $?"; grep -E "FAILED|ERROR|passed|failed" "$OUT/e/tests-scan.txt" | tail -12
