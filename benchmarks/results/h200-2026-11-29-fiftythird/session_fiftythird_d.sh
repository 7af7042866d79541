#!/usr/bin/env bash
# The bench test file on the GPU after test_mixer_layout_workloads takes the device fixture (call 3: it built CPU
# inputs, which a GPU machine has no kernel for).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT/d"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 170 python3 -m pytest -v -o addopts="-ra" -p no:cacheprovider -p no:logging --tb=short -n 8 \
  tests/bench/test_bench.py > "$OUT/d/tests.txt" 2>&1
echo "pytest rc $?"; grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/d/tests.txt" | tail -6
