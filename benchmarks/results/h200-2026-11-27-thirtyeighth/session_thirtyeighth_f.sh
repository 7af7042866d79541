#!/usr/bin/env bash
# Thirty-eighth session, call 6: call 5's four new tests failed to compile on triton 3.6 (the packed state row's name
# was taken by the table's entry pointer); fixed. The four tests, then packed against dense with the stored states on
# (call 5 has them off).
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
timeout 110 python3 -m pytest -q -o addopts="-ra" -n 6 -p no:cacheprovider tests/ops/test_ssd_forward.py \
  tests/ops/test_ssd_backward.py -k "sweep_states_packed or packed_states_from_forward or gluon_packed" \
  > "$OUT/call6-tests.txt" 2>&1
grep -E "^FAILED|^ERROR|^E  |passed|failed" "$OUT/call6-tests.txt" | head -20
timeout 80 python3 benchmarks/packed_vs_dense.py --ssd 8x4096 --ssd 64x512 --scan none --rounds 3 \
  > "$OUT/call6-packed.txt" 2>&1
grep -v -i warn "$OUT/call6-packed.txt" | grep -v lengths
