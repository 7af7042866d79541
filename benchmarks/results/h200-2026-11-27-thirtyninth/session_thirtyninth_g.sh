#!/usr/bin/env bash
# Thirty-ninth session, call 7: call 6's rows still carried the packed path's per-token state reset (a multiply a
# state and token) and final-state stores; now a row's tokens outside its sequence count as delta 0 and u 0 and the
# final state is stored once, after the sweep (IS_VARLEN off). The same A/B as call 6 (scan.ROWS), then the selective
# scan's GPU tests.
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
for value in True False; do
  timeout 110 python3 benchmarks/packed_vs_dense.py --ssd none --scan 8x2048 --scan 64x256 --scan 1x16384 \
    --rounds 3 --set flashssm.ops.selective_scan.scan.ROWS=$value > "$OUT/call7-scan-$value.txt" 2>&1
  echo "== ROWS $value"; grep -v -i warn "$OUT/call7-scan-$value.txt" | grep -v "^set\|NVIDIA\|lengths"
done
timeout 240 python3 -m pytest -q -o addopts="-ra" -n 8 -p no:cacheprovider tests/ops/test_selective_scan.py \
  tests/ops/test_selective_scan_reference.py tests/ops/test_checks.py > "$OUT/call7-tests.txt" 2>&1
grep -E "^FAILED|^ERROR|passed|failed|^E  " "$OUT/call7-tests.txt" | head -30
