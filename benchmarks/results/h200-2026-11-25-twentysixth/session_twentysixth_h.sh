#!/usr/bin/env bash
# Twenty-sixth session, call 8: the GPU tests of the SSD backward file after the fix (the column sums from the bracket
# only where its pair products split: the SPLIT mode's mask no longer rounds them; not in the TF32 mode or at one
# tf32 pass), and the SSD forward file (untouched this session: a check of the shared code).
set -uo pipefail
OUT=${OUT:-bench-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
timeout 300 python3 -m pytest -n 8 -p no:cacheprovider -m "gpu or not gpu" tests/ops/test_ssd_backward.py \
  tests/ops/test_ssd_forward.py 2>&1 | tee "$OUT/call8-tests-ssd.txt" | grep -E "^FAILED|^E  |passed|failed|SEED" | head -20
