#!/usr/bin/env bash
# Thirty-ninth session, call 10 (after the review): the stored-states GPU tests, now through one helper
# (_check_swept_states), and the selective scan's packed and segment tests after varlen_rows became one cached function.
OUT=${OUT:-out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 200 python3 -m pytest -q -o addopts="-ra" -n 8 -p no:cacheprovider tests/ops/test_ssd_forward.py \
  tests/ops/test_selective_scan.py -k "sweep_states or packed_states or segments or varlen or packed" \
  > "$OUT/call10-tests.txt" 2>&1
grep -E "^FAILED|^ERROR|passed|failed|^E  " "$OUT/call10-tests.txt" | head -20
