#!/usr/bin/env bash
# Thirty-ninth session, call 6: Mamba-1's packed forward as a dense batch's (scan.ROWS: a chain of segments a
# sequence, `varlen_rows`), against the packed row as one batch-1 sequence (ROWS False, the session's start), one
# process each (benchmarks/packed_vs_dense.py); then the selective scan's GPU tests.
set -uo pipefail
OUT=${OUT:-out}
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
for value in True False; do
  timeout 120 python3 benchmarks/packed_vs_dense.py --ssd none --scan 8x2048 --scan 64x256 --scan 1x16384 \
    --rounds 5 --set flashssm.ops.selective_scan.scan.ROWS=$value > "$OUT/call6-scan-$value.txt" 2>&1
  echo "== ROWS $value"; grep -v -i warn "$OUT/call6-scan-$value.txt" | grep -v "^set\|NVIDIA"
done
timeout 240 python3 -m pytest -q -o addopts="-ra" -n 8 -p no:cacheprovider tests/ops/test_selective_scan.py \
  tests/ops/test_selective_scan_reference.py > "$OUT/call6-tests.txt" 2>&1
grep -E "^FAILED|^ERROR|passed|failed|^E  " "$OUT/call6-tests.txt" | head -30
