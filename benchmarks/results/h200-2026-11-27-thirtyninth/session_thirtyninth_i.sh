#!/usr/bin/env bash
# Thirty-ninth session, call 9: the Gluon forward tests after their shared comparison with the Triton kernel moved into
# one helper (`_gluon_against_triton`; the duplicates tool had paired ~10 lines of the two tests).
OUT=${OUT:-out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 280 python3 -m pytest -q -o addopts="-ra" -n 8 -p no:cacheprovider tests/ops/test_ssd_forward.py \
  -k "gpu_gluon_forward or gpu_gluon_packed" > "$OUT/call9-tests.txt" 2>&1
grep -E "^FAILED|^ERROR|passed|failed|^E  " "$OUT/call9-tests.txt" | head -20
