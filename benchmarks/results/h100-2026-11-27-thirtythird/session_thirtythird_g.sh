#!/usr/bin/env bash
# Thirty-third session, call 7: every GPU test file with the direct launch's defaults (kernels that had taken Triton's
# launch every call, the Gluon forward and any with a constexpr left to its default, now launch their cached compile)
# and the one-wave run-time spans: pytest -n 8, the SSD forward and backward files first.
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 290 python3 -m pytest -n 8 -q -p no:cacheprovider tests/ops/test_ssd_forward.py tests/ops/test_ssd_backward.py \
  > "$OUT/call7-tests-ssd.txt" 2>&1
tail -4 "$OUT/call7-tests-ssd.txt"
timeout 270 python3 -m pytest -n 8 -q -p no:cacheprovider tests --ignore=tests/ops/test_ssd_forward.py \
  --ignore=tests/ops/test_ssd_backward.py > "$OUT/call7-tests-rest.txt" 2>&1
tail -4 "$OUT/call7-tests-rest.txt"
