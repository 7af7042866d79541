#!/usr/bin/env bash
# Twenty-fifth session, call 3: the GPU tests of the SSD backward and forward files on this code (the deterministic
# mode's states in place at chunks of 128, the paths launch at three stages, the carry from the recompute).
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
timeout 540 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_ssd_backward.py \
  tests/ops/test_ssd_forward.py 2>&1 | tee "$OUT/call3-tests-ssd.txt" | grep -E "^FAILED|^E  |passed|failed|SEED" | head -20
